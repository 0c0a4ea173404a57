//! Sending from the console's Prompt pane, at the update level against the in-process
//! OpenAI-compatible server: the previewed request goes to the selected model and a marked
//! one, each with both A/B arms, every answer is stored linked, and a result opens in History.

mod common;

use common::console::{apply, mark_model, render, row_of};

use common::llm_server::LlmServer;
use ctxconsole::core::compare::Arm;
use ctxconsole::store::history::HistoryStore;
use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::{Effect, Pane, State, update};
use ctxconsole::tui::keymap::Keymap;
use ctxconsole::tui::theme::Theme;
use ctxconsole::tui::{EffectContext, run_effect_now, start, ui};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// A pasted note: more than five lines, so the console attaches it.
const NOTE: &str = "Launch note\n\nThe launch moves to 2 December.\nPricing stays as announced.\nThe beta list gets mail first.\nPress embargo lifts at 09:00 UTC.\n";

const INSTRUCTION: &str =
    "remember this launch note, draft a blog from it and make an illustration";

const ROWS: &str = "[[model]]\nid = \"test/ok-json\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n\n\
     [[model]]\nid = \"test/tool-calls\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n";

/// Select `model` in Budgets, focus the Prompt pane and paste the instruction, then
/// `then` (A/B keys, …).
fn type_for(ctx: &EffectContext, state: &mut State, model: &str, then: &[Action]) {
    let selected = row_of(state, model);
    let mut actions = vec![
        Action::SelectRow(selected),
        Action::FocusPrompt,
        Action::Paste(INSTRUCTION.into()),
    ];
    actions.extend_from_slice(then);
    apply(ctx, state, actions);
}

fn screen(state: &State, width: u16, height: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| ui::draw(f, state, &Theme::plain(), &Keymap::default()))
        .unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..height {
        for x in 0..width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// A workspace whose provider `test/` is the in-process server, with two budget rows.
fn workspace(server: &LlmServer) -> (tempfile::TempDir, Workspace) {
    workspace_with(server, "")
}

/// The workspace in `dir`, opened as the console opens it.
fn open_workspace(dir: &std::path::Path) -> Workspace {
    Workspace::open(&WorkspaceOptions {
        dir: Some(dir.into()),
        registry: None,
    })
    .unwrap()
}

/// The same, with more `[llm]` settings.
fn workspace_with(server: &LlmServer, llm: &str) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[llm]\n{llm}connect_timeout = \"1s\"\ntimeout = \"5s\"\nretries = 1\nretry_base = \"50ms\"\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("budgets.toml"), ROWS).unwrap();
    let ws = open_workspace(dir.path());
    (dir, ws)
}

#[test]
fn the_prompt_pane_sends_the_preview_to_two_models_with_both_arms_and_stores_them_linked() {
    let server = LlmServer::start();
    let (_dir, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    // Mark test/tool-calls, then select test/ok-json.
    mark_model(&ctx, &mut state, "test/tool-calls");
    assert!(state.budgets.marked.contains("test/tool-calls"));
    assert!(screen(&state, 200, 50).contains("+test/tool-calls"));
    type_for(
        &ctx,
        &mut state,
        "test/ok-json",
        // More than five lines: an attachment, sent beside the instruction.
        &[Action::Paste(NOTE.into()), Action::ToggleAb],
    );
    let preview = state.request.clone().expect("the prompt was planned");
    let preview = &preview.planned;
    assert_eq!(preview.attachments.len(), 1);
    assert_eq!(state.ab, [Arm::Full]);
    // The send goes out as one effect naming both models, A/B on.
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let models: Vec<&str> = req.targets.iter().map(|t| t.model.as_str()).collect();
    assert_eq!(models, ["test/ok-json", "test/tool-calls"]);
    assert_eq!(req.arms, [Arm::Full]);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().unwrap_or_else(|| {
        panic!("no outcome: {:?}", state.send.error);
    });
    let got: Vec<(&str, Arm)> = outcome
        .results
        .iter()
        .map(|r| (r.model.as_str(), r.arm))
        .collect();
    assert_eq!(
        got,
        [
            ("test/ok-json", Arm::Compacted),
            ("test/ok-json", Arm::Full),
            ("test/tool-calls", Arm::Compacted),
            ("test/tool-calls", Arm::Full),
        ]
    );
    let group = outcome.compare_group.clone().expect("A/B arms are linked");

    // What the server received for the selected model's compacted arm is the Preview's request.
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 4, "one request per model and arm");
    let shown = serde_json::to_value(&preview.request.messages).unwrap();
    assert!(
        received
            .iter()
            .any(|r| r.body["model"] == "ok-json" && r.body["messages"] == shown),
        "no request to ok-json carried the previewed messages"
    );
    assert!(
        shown.to_string().contains("launch moves to 2 December"),
        "the attachment is in the request sent"
    );

    let history = HistoryStore::open(ctx.history.as_deref().unwrap()).unwrap();
    for r in &outcome.results {
        assert!(
            r.live.plan.is_some(),
            "{} [{}]: {:?}",
            r.model,
            r.arm,
            r.live.failure
        );
        let id = r.live.stored_id.as_deref().expect("stored");
        let stored = history.plan(id).unwrap().expect("in the store").record;
        assert_eq!(stored.caller, "console");
        assert_eq!(stored.model, r.model);
        assert_eq!(stored.arm, Some(r.arm));
        assert_eq!(stored.compare_group.as_deref(), Some(group.as_str()));
    }

    // Side by side in the Prompt pane, each with its arm and plan id.
    let s = screen(&state, 260, 60);
    for needle in [
        "ok-json [compacted]",
        "ok-json [full]",
        "tool-calls [compacted]",
        "tool-calls [full]",
        "valid plan",
        "tokens in/out",
        outcome.results[0].live.stored_id.as_deref().unwrap(),
    ] {
        assert!(s.contains(needle), "{needle} not on screen:\n{s}");
    }

    // The second result opens in History, in full.
    apply(&ctx, &mut state, [Action::NextSent, Action::OpenSent]);
    assert_eq!(state.focus, Pane::History);
    assert!(state.history.expanded);
    let detail = state.history.detail.clone().expect("the plan's detail");
    assert_eq!(
        Some(detail.record.id.as_str()),
        outcome.results[1].live.stored_id.as_deref()
    );
    // The run's time and the call's own, each said (tester 34 F6: 10 ms beside the Sent
    // table's 3 ms, unlabelled).
    let s = screen(&state, 200, 50);
    let call_ms = format!(", the call {} ms", outcome.results[1].live.facts.latency_ms);
    assert!(s.contains("ms in all") && s.contains(&call_ms), "{s}");
    // Esc goes back to the list on that plan (tester 34 F14: on another one).
    apply(&ctx, &mut state, [Action::Back]);
    assert!(!state.history.expanded);
    assert_eq!(
        state.history.selected_plan().map(|p| p.id.as_str()),
        outcome.results[1].live.stored_id.as_deref()
    );
}

/// `ctrl+t` cycles every arm of `send --compare`, then all four, then off; a send with
/// one of them sends that arm beside `compacted` to the in-process server, linked.
#[test]
fn the_ab_key_cycles_every_arm_and_a_send_carries_the_one_chosen() {
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let mut seen = Vec::new();
    for _ in 0..6 {
        apply(&ctx, &mut state, [Action::ToggleAb]);
        seen.push(state.ab.to_vec());
    }
    assert_eq!(
        seen,
        [
            vec![Arm::Full],
            vec![Arm::NoPlanner],
            vec![Arm::NoPrior],
            vec![Arm::NoHint],
            vec![Arm::Full, Arm::NoPlanner, Arm::NoPrior, Arm::NoHint],
            vec![],
        ]
    );
    type_for(
        &ctx,
        &mut state,
        "test/ok-json",
        &[Action::ToggleAb, Action::ToggleAb],
    );
    assert!(screen(&state, 200, 50).contains("A/B no-planner"));
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().expect("an outcome");
    let arms: Vec<Arm> = outcome.results.iter().map(|r| r.arm).collect();
    assert_eq!(arms, [Arm::Compacted, Arm::NoPlanner]);
    assert!(outcome.compare_group.is_some());
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    // No planner narrowing: the no-planner arm's catalog holds entries the compacted one
    // left out, the same allowance or not.
    let tools = |i: usize| received[i].body.to_string().len();
    assert_ne!(tools(0), tools(1), "the two arms sent the same request");
}

/// With `llm.baseline_model` set, the console's send also asks the baseline — the whole
/// catalog, no planner help, no hint — stores it first, and stores each plan with its gap
/// signal against the baseline's steps; the Prompt pane shows the baseline's column and a
/// `vs baseline` row.
#[test]
fn the_console_send_asks_the_configured_baseline_and_stores_each_plans_gap() {
    let server = LlmServer::start();
    let (_home, ws) = workspace_with(&server, "baseline_model = \"test/frontier\"\n");
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().unwrap_or_else(|| {
        panic!("no outcome: {:?}", state.send.error);
    });
    let labels: Vec<String> = outcome.results.iter().map(|r| r.label()).collect();
    assert_eq!(
        labels,
        ["test/ok-json [compacted]", "test/frontier [baseline]"]
    );
    let received = server.requests.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    let to = |m: &str| {
        received
            .iter()
            .find(|r| r.body["model"] == m)
            .map(|r| r.body["messages"].to_string())
            .unwrap()
    };
    // The baseline's catalog is the whole one: longer than the planner-narrowed request.
    assert!(to("frontier").len() > to("ok-json").len());
    let weak = &outcome.results[0];
    let gap = weak
        .gap
        .as_ref()
        .expect("a gap signal against the baseline");
    assert!(!gap.agree, "{gap:?}");
    let store = HistoryStore::open(ctx.history.as_deref().unwrap()).unwrap();
    let id = weak.live.stored_id.as_deref().unwrap();
    let stored = store.plan(id).unwrap().unwrap();
    let expert = stored
        .record
        .expert_baseline
        .expect("stored with the baseline's steps");
    assert_eq!(expert.model.as_deref(), Some("test/frontier"));
    assert_eq!(
        expert.plan_id.as_deref(),
        outcome.results[1].live.stored_id.as_deref()
    );
    let s = screen(&state, 200, 50);
    assert!(
        s.contains("test/frontier [baseline]") && s.contains("vs baseline"),
        "{s}"
    );
}

/// The refusal a read-only store gives a send names the store's path and why at its end; at
/// 80 columns with a long path it is wrapped whole in the Preview, not cut at the pane's edge
/// (the operator saw "…: the history store is read-only (the file or its direct" and no more).
#[test]
fn a_read_only_store_refusal_is_wrapped_whole_at_80_columns() {
    let server = LlmServer::start();
    let (_dir, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    // The store's own refusal, for a store on a long path that cannot be written.
    let conn = rusqlite::Connection::open_with_flags(
        ":memory:",
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let path = std::path::Path::new(
        "/srv/operators/shared-workspaces/team-observability/ctxconsole/history.sqlite",
    );
    let refusal = ctxconsole::store::sqlite::ensure_writable(
        &conn,
        path,
        "history store",
        "send, which stores every answer (nothing was sent),",
    )
    .unwrap_err()
    .to_string();
    assert!(refusal.ends_with("needs to write it"), "{refusal}");
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    apply(&ctx, &mut state, [Action::Sent(req.request, Err(refusal))]);
    let s = screen(&state, 80, 24);
    // The Preview's column (right of the Prompt pane), its wrapped lines joined again without
    // spaces: a path cut across lines reads whole.
    let left = s.lines().nth(1).and_then(|l| l.find("┌")).unwrap();
    let left = s.lines().nth(1).unwrap()[..left].chars().count() + 1;
    let said: String = s
        .lines()
        .flat_map(|l| l.chars().skip(left).take_while(|&c| c != '│'))
        .filter(|c| *c != ' ')
        .collect();
    for part in [
        "/srv/operators/shared-workspaces/team-observability/ctxconsole/history.sqlite:",
        "the history store is read-only",
        "(nothing was sent), needs to write it",
    ] {
        assert!(
            said.contains(&part.replace(' ', "")),
            "{part:?} not on screen:\n{s}"
        );
    }
    insta::assert_snapshot!("send_read_only_store_80x24", s);
}

/// Tester 5 C10: at 120×40 three result columns (two marked models and the baseline) were
/// headed `▶t… [compacted]`, `t… [compacted]`, `t5… ` — the model ids and the `[baseline]`
/// tag cut away, so no column could be told from another. Each column names its model (cut
/// in the middle when it must be, keeping the tail) and its arm or `[baseline]`.
#[test]
fn sent_columns_at_120x40_name_their_model_and_arm() {
    let server = LlmServer::start();
    let (_home, ws) = workspace_with(&server, "baseline_model = \"test/frontier\"\n");
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    mark_model(&ctx, &mut state, "test/tool-calls");
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().expect("sent");
    assert_eq!(outcome.results.len(), 3);
    let s = screen(&state, 120, 40);
    let lines: Vec<&str> = s.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("Sent (alt+j"))
        .unwrap_or_else(|| panic!("no Sent section:\n{s}"));
    let end = lines[start..]
        .iter()
        .position(|l| l.contains("valid plan"))
        .map(|k| start + k)
        .unwrap_or_else(|| panic!("no rows:\n{s}"));
    let head = lines[start..end].join("\n");
    for needle in [
        "ok-json",
        "ool-calls",
        "frontier",
        "[compacted]",
        "[baseline]",
    ] {
        assert!(head.contains(needle), "{needle} not in the header:\n{head}");
    }
    insta::assert_snapshot!("sent_columns_120x40", head);
}

/// Tester 8 F22: at 80×24 the same three columns read `[compa…`, `[basel…` and `send-17…`
/// for every plan id. Each plan id now keeps its end, which tells the three apart; and where
/// an arm's brackets no longer fit but the arm does (100×30), the arm is whole. (At 80×24
/// three columns of 9 cells cannot hold `compacted`.)
#[test]
fn sent_columns_at_80x24_keep_their_arm_and_the_end_of_their_plan_id() {
    let server = LlmServer::start();
    let (_home, ws) = workspace_with(&server, "baseline_model = \"test/frontier\"\n");
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    mark_model(&ctx, &mut state, "test/tool-calls");
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().expect("sent");
    assert_eq!(outcome.results.len(), 3);
    // Where the brackets no longer fit but the arm does, the arm is whole.
    let wider = screen(&state, 100, 30);
    for needle in ["compacted", "baseline"] {
        assert!(wider.contains(needle), "{needle} not on screen:\n{wider}");
    }
    let s = screen(&state, 80, 24);
    let ids: Vec<String> = outcome
        .results
        .iter()
        .map(|r| r.live.stored_id.clone().expect("stored"))
        .collect();
    let line = s
        .lines()
        .find(|l| l.contains("plan id"))
        .unwrap_or_else(|| panic!("no plan id row:\n{s}"));
    for id in &ids {
        let end = &id[id.len() - 2..];
        assert!(line.contains(end), "{id}: {line}");
    }
}

/// Tester 7 T7-15: the console's send waited out another process's write lock, showed the
/// answers as NOT STORED, and lost them on quit without a word. Now the console keeps each
/// as its plan line (the one `ctxconsole send` prints), counts them on the status line,
/// stores them again on `alt+s` (`store_again`) under the ids a send gets, and at quit
/// writes what still cannot be stored to a private file in the workspace that
/// `import plans` restores. Real SQLite: another connection holds the write lock.
#[test]
fn answers_the_store_could_not_take_are_kept_stored_again_and_written_at_quit() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;
    let server = LlmServer::start();
    let (home, ws) = workspace(&server);
    let (mut ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    // A write waits 60 s for the lock; the test need not wait a minute to meet it.
    ctx.lock_wait = Duration::from_millis(200);
    let path = ctx.history.clone().unwrap();
    let plans = || HistoryStore::open(&path).unwrap().counts().unwrap().plans;
    let before = plans();
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();

    // A/B on: two answers of one send, so two lines with the same time, caller and intent.
    type_for(&ctx, &mut state, "test/ok-json", &[Action::ToggleAb]);
    let send = |state: &mut State| {
        let effects = update(state, Action::Send);
        let answer = run_effect_now(&ctx, effects[0].clone());
        // Help open when the answers land: they still land.
        apply(
            &ctx,
            state,
            [Action::ToggleHelp, answer, Action::ToggleHelp],
        );
    };
    send(&mut state);
    let outcome = state.send.outcome.clone().expect("the answers are shown");
    assert_eq!(outcome.results.len(), 2);
    for r in &outcome.results {
        let why = r.live.store_error.as_deref().expect("not stored");
        assert!(why.contains("another process held the write lock"), "{why}");
    }
    assert_eq!(plans(), before);
    assert_eq!(state.unstored.pending.len(), 2);
    let s = screen(&state, 220, 50);
    assert!(
        s.contains("2 answers not stored (alt+s stores again"),
        "{s}"
    );
    assert!(s.contains("NOT STORED, kept until stored again"), "{s}");

    // Asked again while the lock is still held: still kept, and why is said.
    apply(&ctx, &mut state, [Action::StoreAgain]);
    assert_eq!(state.unstored.pending.len(), 2);
    assert!(
        screen(&state, 220, 50).contains("still not stored: storing a sent plan: another"),
        "{}",
        screen(&state, 220, 50)
    );
    assert_eq!(plans(), before);

    // The lock let go: the key stores both, under a send's ids, linked as sent.
    holder.execute_batch("COMMIT").unwrap();
    apply(&ctx, &mut state, [Action::StoreAgain]);
    assert!(state.unstored.pending.is_empty());
    assert_eq!(plans(), before + 2);
    let store = HistoryStore::open(&path).unwrap();
    let outcome = state.send.outcome.clone().unwrap();
    for r in &outcome.results {
        let id = r.live.stored_id.as_deref().expect("shown as stored now");
        assert!(id.starts_with("send-"), "{id}");
        assert!(r.live.store_error.is_none());
        let stored = store.plan(id).unwrap().expect("in the store").record;
        assert_eq!(stored.caller, "console");
        assert_eq!(stored.arm, Some(r.arm));
        assert_eq!(stored.compare_group, outcome.compare_group);
    }
    let s = screen(&state, 220, 50);
    assert!(s.contains("stored 2 answers: send-"), "{s}");
    assert!(!s.contains("NOT STORED"), "{s}");

    // Quitting with the lock held: written to a private file, said, importable.
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    send(&mut state);
    assert_eq!(state.unstored.pending.len(), 2);
    apply(&ctx, &mut state, [Action::Quit]);
    assert!(state.quit);
    let report = ctxconsole::tui::on_quit(&ctx, &mut state, Duration::from_millis(200));
    let said = report.said.join("\n");
    assert!(report.lines.is_empty(), "a file took them");
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("unstored-plans-"))
        .collect();
    let [file] = files.as_slice() else {
        panic!("{files:?}: {said}")
    };
    assert!(
        said.contains("2 answers could not be stored")
            && said.contains("another process held the write lock")
            && said.contains(&file.display().to_string())
            && said.contains("ctxconsole import plans"),
        "{said}"
    );
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(plans(), before + 2);
    holder.execute_batch("COMMIT").unwrap();
    let r: serde_json::Value = serde_json::from_slice(
        &common::succeeded(
            common::ctx(home.path())
                .args(["import", "plans", "--json", "--store"])
                .arg(&path)
                .arg(file),
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(r["added"], 2, "{r}");
    assert_eq!(plans(), before + 4);
    let store = HistoryStore::open(&path).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_str().expect("each line names its plan");
        let stored = store.plan(id).unwrap().expect("imported").record;
        assert_eq!(stored.caller, "console");
        assert_eq!(
            stored.answer.as_ref(),
            v.get("answer").filter(|a| !a.is_null())
        );
    }
}

/// Tester 9 T9-7: the console sent while another process held the write lock without the
/// word `ctxconsole send` gives before paying. Its send now says it among the progress lines.
#[test]
fn the_console_says_while_sending_that_another_process_is_writing_the_store() {
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let path = ctx.history.clone().unwrap();
    // Another process's import holds the lock for a second, then lets go.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(1));
        conn.execute_batch("ROLLBACK").unwrap();
    });
    locked_rx.recv().unwrap();
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let into = said.clone();
    let report: ctxconsole::tui::SendReport = std::sync::Arc::new(move |news| {
        if let ctxconsole::tui::send::SendNews::Line(label, line) = news {
            into.lock().unwrap().push(format!("{label}: {line}"))
        }
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sent = rt.block_on(ctxconsole::tui::run_send(&ctx, req, report));
    holder.join().unwrap();
    assert!(sent.is_ok(), "stored once the lock was let go");
    let said = said.lock().unwrap().join("\n");
    assert!(
        said.contains("store: another process is writing")
            && said.contains("one that cannot be is kept until stored again"),
        "{said}"
    );
}

/// Tester 10 T10-16 residual: once every call had answered and the answers only waited for
/// another process's write lock, the pane still said `Sending… (esc cancels)` and esc did
/// nothing. The send says when only storing is left, and whether it waits for the lock;
/// the pane says so without offering esc, and esc leaves the pane (nothing to cancel).
#[test]
fn a_send_waiting_only_for_the_store_says_so_and_esc_leaves_the_pane() {
    use ctxconsole::tui::send::SendNews;
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let path = ctx.history.clone().unwrap();
    // Another process holds the write lock until the send says it is only storing.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (storing_tx, storing_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        let said = storing_rx.recv_timeout(std::time::Duration::from_secs(30));
        conn.execute_batch("ROLLBACK").unwrap();
        said.is_ok()
    });
    locked_rx.recv().unwrap();
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let news = std::sync::Arc::new(std::sync::Mutex::new(Vec::<SendNews>::new()));
    let into = news.clone();
    let storing_tx = std::sync::Mutex::new(storing_tx);
    let report: ctxconsole::tui::SendReport = std::sync::Arc::new(move |n| {
        if matches!(n, SendNews::Storing { .. }) {
            let _ = storing_tx.lock().unwrap().send(());
        }
        into.lock().unwrap().push(n);
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sent = rt.block_on(ctxconsole::tui::run_send(&ctx, req, report));
    assert!(holder.join().unwrap(), "the send never said it was storing");
    assert!(sent.is_ok(), "stored once the lock was let go");
    let news = news.lock().unwrap().clone();
    let storing = news
        .iter()
        .position(|n| matches!(n, SendNews::Storing { .. }))
        .unwrap();
    assert_eq!(
        news[storing],
        SendNews::Storing { waiting: true },
        "{news:?}"
    );
    // Once only storing is left, nothing is said but what the store did (tester 22 F4:
    // each answer is stored as it comes back, and says so).
    assert!(
        news[storing + 1..].iter().all(|n| matches!(n,
            SendNews::Line(_, line) if line.contains("· stored as send-"))),
        "{news:?}"
    );
    assert!(
        storing > 0
            && matches!(&news[storing - 1],
        SendNews::Line(_, line) if line.ends_with("· storing")),
        "{news:?}"
    );
    // The pane, with what the send said so far (the answer not yet stored).
    let request = req.request;
    let sending = screen(&state, 120, 40);
    assert!(sending.contains("Sending… (esc cancels)"), "{sending}");
    for n in news {
        update(&mut state, Action::SendProgress(request, n));
    }
    let waiting = screen(&state, 120, 40);
    assert!(
        waiting.contains("Storing… waiting for the store's write lock"),
        "{waiting}"
    );
    assert!(!waiting.contains("esc cancels"), "{waiting}");
    assert!(update(&mut state, Action::Back).is_empty());
    assert_ne!(state.focus, Pane::Prompt, "esc left the Prompt pane");
}

/// Tester 12 T12-6, the console's send: the configured key in the prompt is sent as
/// written and stored redacted. (The key is the value of a variable the test process
/// already has — cargo sets `CARGO_MANIFEST_DIR` — as a test cannot set one safely.)
#[test]
fn the_configured_key_in_the_console_prompt_is_sent_as_written_and_stored_redacted() {
    let server = LlmServer::start();
    let (dir, _) = workspace(&server);
    let key = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let config = dir.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}key_env = \"CARGO_MANIFEST_DIR\"\n")).unwrap();
    let ws = open_workspace(dir.path());
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let selected = row_of(&state, "test/ok-json");
    let prompt = format!("deploy from {key} with the launch note");
    apply(
        &ctx,
        &mut state,
        [
            Action::SelectRow(selected),
            Action::FocusPrompt,
            Action::Paste(prompt.clone()),
        ],
    );
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().expect("sent");
    let received = server.requests.lock().unwrap().clone();
    assert!(
        received[0].body.to_string().contains(&prompt),
        "sent as written"
    );
    let id = outcome.results[0]
        .live
        .stored_id
        .as_deref()
        .expect("stored");
    let history = HistoryStore::open(ctx.history.as_deref().unwrap()).unwrap();
    let stored = history.plan(id).unwrap().expect("in the store").record;
    assert_eq!(stored.intent, "deploy from [REDACTED] with the launch note");
}

/// Tester 12 T12-7: with another process holding the store's write lock, each answer of an
/// A/B send waited the whole lock wait in turn (two arms: 2 × 60 s, past the quit's 75 s),
/// and only the answer whose store was running was in hand (`live::in_hand`): a second
/// ctrl+c wrote 1 of 2 answers (1 of 5 with A/B all) to the file, the rest were lost. Every
/// answer is in hand from the moment it is back, the first refusal stands for the others
/// (one wait, each kept with its reason), and a kept answer stays in hand until stored again.
#[test]
fn every_answer_of_an_ab_send_is_in_hand_and_the_store_is_waited_for_once() {
    use ctxconsole::live::in_hand::lines_in_hand;
    use ctxconsole::tui::send::SendNews;
    use std::time::{Duration, Instant};
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (mut ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    ctx.lock_wait = Duration::from_secs(1);
    let path = ctx.history.clone().unwrap();
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // A/B all: compacted and four arms, five answers.
    type_for(&ctx, &mut state, "test/ok-json", &vec![Action::ToggleAb; 5]);
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(req.arms.len(), 4, "{:?}", req.arms);
    let mine = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.contains(INSTRUCTION) && l.contains("\"console\""))
            .count()
    };
    // When every call has answered and storing starts, all five are in hand.
    let in_hand_when_storing = std::sync::Arc::new(std::sync::Mutex::new(None));
    let into = in_hand_when_storing.clone();
    let report: ctxconsole::tui::SendReport = std::sync::Arc::new(move |news| {
        if matches!(news, SendNews::Storing { .. }) {
            *into.lock().unwrap() = Some(mine(&lines_in_hand()));
        }
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let sent = rt
        .block_on(ctxconsole::tui::run_send(&ctx, req, report))
        .unwrap();
    let took = started.elapsed();
    let in_hand = in_hand_when_storing
        .lock()
        .unwrap()
        .expect("storing was said");
    assert!(in_hand >= 5, "answers in hand as storing starts: {in_hand}");
    assert_eq!(sent.results.len(), 5);
    let now = lines_in_hand();
    for r in &sent.results {
        let why = r.live.store_error.as_deref().expect("not stored");
        assert!(why.contains("another process held the write lock"), "{why}");
        let line = r.live.unsaved_plan.as_ref().expect("kept as its line");
        assert!(now.contains(line), "{} kept but not in hand", r.label());
    }
    // One wait, not five: five would take 5 s at least. (3 s had been the bound; a 2-core
    // machine at load 7.5 took 3.2 s, beside the lock note's new probe of up to 250 ms.)
    assert!(
        took < Duration::from_millis(4_500),
        "five answers waited {took:?} for a 1 s lock wait"
    );
    holder.execute_batch("ROLLBACK").unwrap();
}

/// Tester 19 F15: ctrl+s sent a row's response format and sampling the Preview pane never
/// showed. The pane says both, and what the server receives is what it says.
#[test]
fn the_preview_pane_says_the_response_format_and_sampling_that_ctrl_s_sends() {
    let server = LlmServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("budgets.toml"),
        "[[model]]\nid = \"test/ok-json\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n\
         strict_json = true\ntemperature = 0.2\nseed = 7\nstop = [\"END\"]\n",
    )
    .unwrap();
    let ws = open_workspace(dir.path());
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let shown = screen(&state, 200, 60);
    assert!(shown.contains("response_format json_object"), "{shown}");
    assert!(
        shown.contains(r#"sampling: temperature 0.2, seed 7, stop ["END"]"#),
        "{shown}"
    );
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let received = server.requests.lock().unwrap().clone();
    let body = &received.first().expect("a request").body;
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["stop"][0], "END");
}

/// The History pane's plans: how many, and the ids on the page read.
fn history_plans(state: &State) -> (u64, Vec<String>) {
    let page = state.history.plans.as_ref().expect("the plans were read");
    (page.total, page.rows.iter().map(|p| p.id.clone()).collect())
}

/// Tester 22 F2: after the console's own sends and replays the History pane still showed
/// the plans, groups, models and charts as first read (674 plans while the store held 686),
/// and the plan ctrl+o had just opened was missing from the list esc went back to. Each
/// store marks the pane's data stale: it is read again (for the same filters) when the pane
/// is shown, or at once when it is, with no filter key.
#[test]
fn the_history_pane_lists_what_the_console_stores_without_a_filter_key() {
    let server = LlmServer::start();
    let (_dir, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    apply(&ctx, &mut state, [Action::FocusHistory]);
    let (before, _) = history_plans(&state);
    apply(&ctx, &mut state, [Action::FocusBudgets]);

    // A send, then History: the plan is counted and listed, and its model charted.
    type_for(&ctx, &mut state, "test/ok-json", &[Action::Send]);
    let sent = state.send.selected_plan().expect("stored").to_string();
    apply(&ctx, &mut state, [Action::FocusHistory]);
    let (total, ids) = history_plans(&state);
    assert_eq!(total, before + 1);
    assert_eq!(ids.first(), Some(&sent), "{ids:?}");
    assert_eq!(
        HistoryStore::open(ctx.history.as_deref().unwrap())
            .unwrap()
            .plans_page(&Default::default(), 0, 1)
            .unwrap()
            .0,
        total,
        "the pane's count is the store's"
    );
    assert!(
        state
            .history
            .model_rows
            .iter()
            .any(|m| m.outcomes.model == "test/ok-json"),
        "{:?}",
        state.history.model_rows
    );
    assert!(state.history.trends.as_ref().is_some_and(|t| !t.is_empty()));
    assert!(render(&state, 160, 45).contains(&format!("Plans · {total} ")));

    // A live replay from the pane itself: the lists have it at once, the selection stays
    // on the plan replayed.
    apply(
        &ctx,
        &mut state,
        [Action::Top, Action::Replay, Action::Down, Action::Open],
    );
    let (total, ids) = history_plans(&state);
    assert_eq!(total, before + 2, "{ids:?}");
    assert_eq!(
        ids.first().map(String::as_str),
        Some(&*format!("{sent}.r1"))
    );
    assert_eq!(
        state.history.selected_plan().map(|p| p.id.as_str()),
        Some(sent.as_str())
    );

    // ctrl+o on a new send's result, then esc: the list it goes back to holds that plan.
    apply(&ctx, &mut state, [Action::FocusPrompt, Action::Send]);
    let again = state.send.selected_plan().expect("stored").to_string();
    apply(&ctx, &mut state, [Action::OpenSent]);
    assert!(state.history.expanded);
    apply(&ctx, &mut state, [Action::Back]);
    let (total, ids) = history_plans(&state);
    assert_eq!(total, before + 3);
    assert!(ids.contains(&again), "{ids:?}");
}

/// Tester 22 F4: beside a slow model, a model whose whole answer was back in 5 ms still
/// read `receiving 90 B answer` until the slowest ended. Each call's line says it is back,
/// with its latency and whether its plan is valid, as soon as its answer is whole.
#[test]
fn a_call_whose_answer_is_back_says_so_while_a_slower_one_is_still_out() {
    use ctxconsole::tui::send::SendNews;
    let server = LlmServer::start();
    let (dir, _) = workspace(&server);
    let budgets = dir.path().join("budgets.toml");
    std::fs::write(
        &budgets,
        format!(
            "{ROWS}\n[[model]]\nid = \"test/slow-one\"\ninput_tokens = 32000\n\
             output_tokens = 2000\ntier = \"B\"\n"
        ),
    )
    .unwrap();
    let ws = open_workspace(dir.path());
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    mark_model(&ctx, &mut state, "test/slow-one");
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let [Effect::Send(req)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let into = said.clone();
    let report: ctxconsole::tui::SendReport = std::sync::Arc::new(move |news| {
        if let SendNews::Line(label, line) = news {
            into.lock().unwrap().push((label, line));
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sent = rt.block_on(ctxconsole::tui::run_send(&ctx, req, report));
    assert!(sent.is_ok(), "{:?}", sent.err());
    let said = said.lock().unwrap().clone();
    let back = |label: &str| {
        said.iter()
            .position(|(l, line)| l == label && line.contains(" · back in "))
            .unwrap_or_else(|| panic!("{label} never said it was back: {said:#?}"))
    };
    let fast = back("test/ok-json [compacted]");
    assert!(fast < back("test/slow-one [compacted]"), "{said:#?}");
    let (_, line) = &said[fast];
    assert!(
        line.starts_with("test/ok-json [compacted] on test/ok-json · back in ")
            && line.contains(" ms · valid plan yes (ok)"),
        "{line}"
    );
    // What the pane shows for it while the slow one is out: that line, not `receiving`.
    let mut view = state.send.clone();
    for (label, line) in &said[..=fast] {
        view.progress(req.request, SendNews::Line(label.clone(), line.clone()));
    }
    assert_eq!(view.progress["test/ok-json [compacted]"], *line);
}

/// Tester 34 F15: the Sent table stayed above the Preview of another prompt and model,
/// unlabelled, so an operator read two requests as one. It says it is earlier, and what it
/// asked, once the Preview shows another request; and not while it is the same.
#[test]
fn the_sent_table_says_it_is_earlier_once_the_preview_is_another_request() {
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    assert!(state.send.outcome.is_some(), "sent");
    let same = screen(&state, 160, 50);
    assert!(same.contains("Sent (alt+j"), "{same}");
    assert!(!same.contains("Sent earlier"), "{same}");

    // Another model selected: the table is another request's.
    let other = row_of(&state, "test/tool-calls");
    apply(
        &ctx,
        &mut state,
        [
            Action::FocusBudgets,
            Action::SelectRow(other),
            Action::FocusPrompt,
        ],
    );
    let moved = screen(&state, 160, 50);
    assert!(
        moved.contains("Sent earlier, not the request below"),
        "{moved}"
    );
    assert!(
        moved.contains("asked 'remember this launch note"),
        "{moved}"
    );
    // What it asked names the model asked (tester 35 F6).
    assert!(moved.contains("of test/ok-json"), "{moved}");

    // Back on the model it asked, with the same words: the same request again.
    let back = row_of(&state, "test/ok-json");
    apply(
        &ctx,
        &mut state,
        [
            Action::FocusBudgets,
            Action::SelectRow(back),
            Action::FocusPrompt,
        ],
    );
    assert!(screen(&state, 160, 50).contains("Sent (alt+j"));

    // A tier override plans another request for the same model (tester 35 F4).
    apply(&ctx, &mut state, [Action::CycleTier]);
    assert!(screen(&state, 160, 50).contains("Sent earlier"));
    apply(
        &ctx,
        &mut state,
        [Action::CycleTier, Action::CycleTier, Action::CycleTier],
    );
    assert!(screen(&state, 160, 50).contains("Sent (alt+j"));

    // Another instruction: earlier again.
    apply(&ctx, &mut state, [Action::Paste(" now".into())]);
    assert!(screen(&state, 160, 50).contains("Sent earlier"));
}

/// The Sent table's rows from its heading to its plan id row, as the Preview shows them
/// (the part of each screen line right of the Prompt pane's column).
fn sent_table(s: &str) -> Vec<String> {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("Sent (alt+j"))
        .unwrap_or_else(|| panic!("no Sent section:\n{s}"));
    let end = lines[start..]
        .iter()
        .position(|l| l.contains("plan id"))
        .map(|k| start + k)
        .unwrap_or_else(|| panic!("no plan id row:\n{s}"));
    // A column, counted in characters: the Prompt pane to the left draws characters of
    // more than one byte (`│`, `…`, `▸`) on some lines and not others (review 49 N8).
    let left = lines[start]
        .find("│Sent")
        .map_or(0, |at| lines[start][..at].chars().count());
    lines[start..=end]
        .iter()
        .map(|l| l.chars().skip(left).collect())
        .collect()
}

/// Tester (Low): an A/B-all send to two models (10 results) showed 9 result columns in a
/// 160×45 terminal, the rest cut to `…`; `ctrl+n` moved the selection onto them, no column
/// showed `▶` any more, and `ctrl+o` opened a result whose id was nowhere on screen. The
/// table scrolls to keep the selected result in view and says how many lie off either side.
#[test]
fn the_sent_table_scrolls_to_the_selected_result_and_counts_those_off_screen() {
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    state.resized(160, 45);
    mark_model(&ctx, &mut state, "test/tool-calls");
    // off → full → no-planner → no-prior → no-hint → all.
    type_for(
        &ctx,
        &mut state,
        "test/ok-json",
        &[const { Action::ToggleAb }; 5],
    );
    assert_eq!(state.ab.len(), 4, "A/B all");
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().unwrap_or_else(|| {
        panic!("no outcome: {:?}", state.send.error);
    });
    assert_eq!(outcome.results.len(), 10);
    let ids: Vec<String> = outcome
        .results
        .iter()
        .map(|r| r.live.stored_id.clone().expect("stored"))
        .collect();
    for selected in 0..10 {
        if selected > 0 {
            apply(&ctx, &mut state, [Action::NextSent]);
        }
        assert_eq!(state.send.selected, selected);
        let s = screen(&state, 160, 45);
        let table = sent_table(&s);
        let all = table.join("\n");
        // The selected column is marked, and its plan id reads whole.
        assert!(all.contains('▶'), "result {selected} not marked:\n{s}");
        let id_row = table.last().map(String::as_str).unwrap_or_default();
        let on_screen = |i: usize| id_row.split_whitespace().any(|w| w == ids[i]);
        assert!(on_screen(selected), "{} not on screen:\n{s}", ids[selected]);
        // The ids on screen are a run of the results around the selected one, and the
        // table says how many lie off either side.
        let shown: Vec<usize> = (0..10).filter(|&i| on_screen(i)).collect();
        let (first, last) = (shown[0], shown[shown.len() - 1]);
        assert_eq!(shown, (first..=last).collect::<Vec<_>>(), "{id_row}");
        assert!(shown.len() < 10, "all 10 fit? {id_row}");
        assert!(
            all.contains(&format!("results {}–{} of 10", first + 1, last + 1)),
            "{all}"
        );
        let header = table
            .iter()
            .find(|l| l.contains('▶'))
            .map(String::as_str)
            .unwrap_or_default();
        assert_eq!(header.contains(&format!("‹ {first}")), first > 0, "{all}");
        assert_eq!(
            header.contains(&format!("{} ›", 9 - last)),
            last < 9,
            "{all}"
        );
    }
    // What ctrl+o opens is the result shown selected: the 10th.
    apply(&ctx, &mut state, [Action::OpenSent]);
    let detail = state.history.detail.clone().expect("the plan's detail");
    assert_eq!(detail.record.id, ids[9]);
    // The plan ids row shows result `shown` and not result `hidden`.
    let shows = |state: &State, shown: usize, hidden: usize| {
        let table = sent_table(&screen(state, 160, 45));
        let id_row = table.last().cloned().unwrap_or_default();
        let words: Vec<&str> = id_row.split_whitespace().collect();
        assert!(
            words.contains(&ids[shown].as_str()) && !words.contains(&ids[hidden].as_str()),
            "{id_row}"
        );
    };
    // Wrapping round to the first scrolls back.
    apply(&ctx, &mut state, [Action::FocusPrompt, Action::NextSent]);
    assert_eq!(state.send.selected, 0);
    shows(&state, 0, 9);
    // prev_sent goes back: from the first to the last, the table scrolled to it.
    apply(&ctx, &mut state, [Action::PrevSent]);
    assert_eq!(state.send.selected, 9);
    shows(&state, 9, 0);
    apply(&ctx, &mut state, [Action::PrevSent]);
    assert_eq!(state.send.selected, 8);
}

/// Tester 49 F6: a budgets prefix row (`test/*`, a family) selected or marked in Budgets
/// was sent to as model `test/` — the CLI refuses the same row. The Preview's route says it
/// is not sent as it stands, and a send asks the server for the models only.
#[test]
fn a_prefix_row_is_no_model_a_send_goes_to() {
    let server = LlmServer::start();
    let (dir, _) = workspace(&server);
    std::fs::write(
        dir.path().join("budgets.toml"),
        format!(
            "{ROWS}\n[[model]]\nid = \"test/\"\nmatch = \"prefix\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n"
        ),
    )
    .unwrap();
    let ws = open_workspace(dir.path());
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    type_for(&ctx, &mut state, "test/", &[]);
    let shown = screen(&state, 200, 50);
    assert!(
        shown.contains("not sent as it stands") && shown.contains("budgets.toml pattern"),
        "{shown}"
    );
    // Marked beside a model: the send goes to the model alone.
    apply(&ctx, &mut state, [Action::FocusBudgets]);
    mark_model(&ctx, &mut state, "test/");
    assert!(state.budgets.marked.contains("test/"));
    apply(&ctx, &mut state, [Action::FocusBudgets]);
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let targets: Vec<String> = state.send_targets().into_iter().map(|t| t.model).collect();
    assert_eq!(targets, ["test/ok-json", "test/*"]);
    let effects = update(&mut state, Action::Send);
    if let [Effect::Send(_)] = effects.as_slice() {
        let answer = run_effect_now(&ctx, effects[0].clone());
        apply(&ctx, &mut state, [answer]);
    }
    let received = server.requests.lock().unwrap().clone();
    let models: Vec<&serde_json::Value> = received.iter().map(|r| &r.body["model"]).collect();
    assert!(
        models.iter().all(|m| *m == "ok-json"),
        "a request went to the prefix row: {models:?}"
    );
    assert!(!models.is_empty(), "the model itself was sent to");
}

/// The cells of screen row `y` from column `from`, each with its column.
fn cells(buf: &ratatui::buffer::Buffer, y: u16, from: u16) -> Vec<(u16, String)> {
    (from..buf.area.width)
        .map(|x| (x, buf[(x, y)].symbol().to_string()))
        .collect()
}

/// The columns where `word` (ASCII) begins on a row of [`cells`].
fn starts_of(row: &[(u16, String)], word: &str) -> Vec<u16> {
    let letters: Vec<String> = word.chars().map(String::from).collect();
    (0..row.len())
        .filter(|&i| {
            row.len() >= i + letters.len()
                && row[i..i + letters.len()]
                    .iter()
                    .zip(&letters)
                    .all(|((_, s), l)| s == l)
        })
        .map(|i| row[i].0)
        .collect()
}

/// Tester 50 F8: the Sent table padded its columns by characters, so with model ids of
/// CJK characters (two cells each) the second column's header began 4 cells right of its
/// column and its arm was cut to `…` in a pane with room to spare. Laid out by cells (as the
/// CLI's `send` table is), each header starts where its column's rows start.
#[test]
fn the_sent_table_lines_up_cjk_model_ids_by_cells() {
    let server = LlmServer::start();
    let (dir, _) = workspace(&server);
    std::fs::write(
        dir.path().join("budgets.toml"),
        "[[model]]\nid = \"test/模型一号\"\ninput_tokens = 32000\noutput_tokens = 1000\ntier = \"B\"\n\n\
         [[model]]\nid = \"test/模型二号\"\ninput_tokens = 32000\noutput_tokens = 1000\ntier = \"B\"\n",
    )
    .unwrap();
    let ws = open_workspace(dir.path());
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    state.resized(160, 45);
    mark_model(&ctx, &mut state, "test/模型一号");
    type_for(&ctx, &mut state, "test/模型二号", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    let outcome = state.send.outcome.clone().expect("sent");
    assert_eq!(outcome.results.len(), 2);
    let mut term = Terminal::new(TestBackend::new(160, 45)).unwrap();
    term.draw(|f| ui::draw(f, &state, &Theme::plain(), &Keymap::default()))
        .unwrap();
    let buf = term.backend().buffer().clone();
    let text = screen(&state, 160, 45);
    let row_where = |needle: &str| -> u16 {
        (0..45u16)
            .find(|&y| {
                cells(&buf, y, 0)
                    .iter()
                    .map(|(_, s)| s.as_str())
                    .collect::<String>()
                    .contains(needle)
            })
            .unwrap_or_else(|| panic!("no row with {needle}:\n{text}"))
    };
    // The Preview: from the Sent heading's column on.
    let heading = row_where("│Sent (");
    let left = starts_of(&cells(&buf, heading, 0), "Sent (")[0];
    let header = cells(&buf, row_where("▶"), left);
    let ids = cells(&buf, row_where("plan id"), left);
    // Each column's plan id, whole at this width, starts the column; its header (the `▶`
    // or a space, then the model) one cell before the model.
    let columns = starts_of(&ids, "send-");
    let models: Vec<u16> = starts_of(&header, "test/")
        .into_iter()
        .map(|x| x - 1)
        .collect();
    assert_eq!(columns.len(), 2, "{text}");
    assert_eq!(models, columns, "headers off their columns:\n{text}");
    let valid = cells(&buf, row_where("valid plan"), left);
    let first_cells: Vec<u16> = columns
        .iter()
        .map(|&x| {
            valid
                .iter()
                .find(|(at, _)| *at == x)
                .map_or(0, |(at, s)| if s == " " { 0 } else { *at })
        })
        .collect();
    assert_eq!(first_cells, columns, "valid plan off its columns:\n{text}");
    // Both arms whole: nothing cut in a pane with room.
    let header_text: String = header.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(starts_of(&header, "[compacted]").len(), 2, "{header_text}");
    assert!(!header_text.contains('…'), "{header_text}");
}

/// The Sent table's heading, as drawn with `keymap`, and the status line.
fn heading_and_status(state: &State, keymap: &Keymap) -> (String, String) {
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    term.draw(|f| ui::draw(f, state, &Theme::plain(), keymap))
        .unwrap();
    let buf = term.backend().buffer().clone();
    let rows: Vec<String> = (0..50u16)
        .map(|y| (0..200u16).map(|x| buf[(x, y)].symbol()).collect())
        .collect();
    let heading = rows
        .iter()
        .find_map(|l| l.find("│Sent").map(|at| l[at + "│".len()..].to_string()))
        .unwrap_or_else(|| panic!("no Sent heading:\n{}", rows.join("\n")));
    let heading = heading
        .split('│')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    (heading, rows[49].trim().to_string())
}

/// Tester 50 F10: the Sent heading read `ctrl+n next · ctrl+o opens in History` whatever
/// the keymap (with both rebound it named dead keys while the status line named the live
/// ones) and never named the previous key. It names the live keymap's keys, the ones the
/// status line names and that act in the Prompt box.
#[test]
fn the_sent_heading_names_the_keys_of_the_live_keymap() {
    use ctxconsole::tui::key_action;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    mark_model(&ctx, &mut state, "test/tool-calls");
    type_for(&ctx, &mut state, "test/ok-json", &[]);
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    assert_eq!(state.send.outcome.as_ref().expect("sent").results.len(), 2);
    let (heading, _) = heading_and_status(&state, &Keymap::default());
    assert_eq!(
        heading,
        "Sent (alt+j next · alt+k previous · ctrl+o opens in History)"
    );
    let rebound = Keymap::with_overlay(
        "[keys]\n\"alt+j\" = \"none\"\n\"alt+k\" = \"none\"\n\"ctrl+o\" = \"none\"\n\
         \"alt+l\" = \"next_sent\"\n\"alt+y\" = \"prev_sent\"\n\"alt+o\" = \"open_sent\"\n",
        "keymap.toml",
    )
    .unwrap();
    let (heading, status) = heading_and_status(&state, &rebound);
    assert_eq!(
        heading,
        "Sent (alt+l next · alt+y previous · alt+o opens in History)"
    );
    assert!(
        status.contains("alt+l next result") && status.contains("alt+o open result"),
        "{status}"
    );
    // The keys named act in the Prompt box.
    let alt = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    for (c, action) in [
        ('l', Action::NextSent),
        ('y', Action::PrevSent),
        ('o', Action::OpenSent),
    ] {
        assert_eq!(key_action(&state, &rebound, &alt(c)), Some(action));
    }
    // The tester's file: alt+n is the Prompt box's own (paragraph down), so it is neither
    // named nor taken from the box; next_sent keeps its default key, which is named.
    let testers = Keymap::with_overlay(
        "[keys]\n\"ctrl+n\" = \"none\"\n\"ctrl+o\" = \"none\"\n\"alt+n\" = \"next_sent\"\n\"alt+o\" = \"open_sent\"\n",
        "keymap.toml",
    )
    .unwrap();
    let (heading, status) = heading_and_status(&state, &testers);
    assert_eq!(
        heading,
        "Sent (alt+j next · alt+k previous · alt+o opens in History)"
    );
    assert!(status.contains("alt+j next result"), "{status}");
    assert!(
        !heading.contains("ctrl+") && !status.contains("ctrl+n"),
        "{status}"
    );
    assert!(matches!(
        key_action(&state, &testers, &alt('n')),
        Some(Action::PromptKey(_))
    ));
    // No key at all for an action: not named.
    let none = Keymap::with_overlay(
        "[keys]\n\"alt+k\" = \"none\"\n\"ctrl+o\" = \"none\"\n",
        "keymap.toml",
    )
    .unwrap();
    assert_eq!(heading_and_status(&state, &none).0, "Sent (alt+j next)");
}

/// Tester 50 F10: ctrl+p, bound to prev_sent, no longer moved the cursor up in the Prompt
/// box (the text area's emacs line up, as ctrl+n is its line down) and did nothing at all
/// without results. While the box has focus it keeps its own keys; the Sent table's keys
/// are others.
#[test]
fn ctrl_p_and_ctrl_n_move_the_cursor_in_the_prompt_box_with_results_shown() {
    use ctxconsole::tui::key_action;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let server = LlmServer::start();
    let (_home, ws) = workspace(&server);
    let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
    let keymap = Keymap::default();
    let press = |state: &mut State, ev: KeyEvent| {
        let action = key_action(state, &keymap, &ev).expect("a key in the Prompt box acts");
        apply(&ctx, state, [action]);
    };
    let ctrl = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    let alt = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    // Without results, and then with two.
    type_for(
        &ctx,
        &mut state,
        "test/ok-json",
        &[Action::Paste("\nsecond".into())],
    );
    assert_eq!(state.prompt.input.cursor().0, 1);
    press(&mut state, ctrl('p'));
    assert_eq!(
        state.prompt.input.cursor().0,
        0,
        "ctrl+p is the box's line up"
    );
    press(&mut state, ctrl('n'));
    assert_eq!(
        state.prompt.input.cursor().0,
        1,
        "ctrl+n is the box's line down"
    );
    apply(&ctx, &mut state, [Action::FocusBudgets]);
    mark_model(&ctx, &mut state, "test/tool-calls");
    type_for(
        &ctx,
        &mut state,
        "test/ok-json",
        &[Action::Paste("\nsecond".into())],
    );
    let effects = update(&mut state, Action::Send);
    let answer = run_effect_now(&ctx, effects[0].clone());
    apply(&ctx, &mut state, [answer]);
    assert_eq!(state.send.outcome.as_ref().expect("sent").results.len(), 2);
    assert_eq!(state.focus, Pane::Prompt);
    let row = state.prompt.input.cursor().0;
    assert!(row > 0);
    press(&mut state, ctrl('p'));
    assert_eq!(state.prompt.input.cursor().0, row - 1);
    assert_eq!(state.send.selected, 0, "ctrl+p left the selection alone");
    press(&mut state, ctrl('n'));
    assert_eq!(state.prompt.input.cursor().0, row);
    assert_eq!(state.send.selected, 0, "ctrl+n left the selection alone");
    // The Sent table's keys move the selection, and not the cursor.
    press(&mut state, alt('j'));
    assert_eq!(state.send.selected, 1);
    press(&mut state, alt('k'));
    assert_eq!(state.send.selected, 0);
    assert_eq!(state.prompt.input.cursor().0, row);
}
