//! The terminal console. `update` is pure; effects run on tokio's blocking pool and come
//! back as actions; drawing borrows the state and never blocks.

pub mod action;
pub mod app;
pub mod attach;
pub mod keymap;
pub mod layout;
pub mod panes;
pub mod request_id;
pub mod semantic;
pub mod send;
pub mod snapshot;
pub mod terminal;
pub mod theme;
pub mod ui;
pub mod unstored;

use crate::core::terminal_text::ShownPath;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

use crate::core::budget::Tokenizer;
use crate::embed::Semantic;
use crate::exit::bad_input;
use crate::import::read_optional_text;
use crate::live::kept_file::{KeptReport, keep_unstored};
use crate::live::replay::{ReplayContext, ReplayProgress, replay_live, replay_offline};
use crate::preview::PreviewContext;
use crate::store::history::HistoryStore;
use crate::store::view::run_query;
use crate::tui::action::{Action, Done};
use crate::tui::app::{Effect, Pane, State, update};
use crate::tui::keymap::Keymap;
use crate::tui::panes::history::{ReplayRequest, ReplayResult};
use crate::tui::semantic::{SemanticJob, SemanticStatus};
use crate::tui::send::{CONSOLE_CALLER, SendNews, SendOutcome, SendRequest, SentArm};
use crate::tui::snapshot::plan_snapshot;
use crate::tui::theme::{Theme, no_color};
use crate::workspace::{Config, KEYMAP_FILE, StoreChoice, THEME_FILE, Workspace, WorkspaceOptions};

/// A workspace file's text and its name for errors, if the file is there.
fn optional_file(dir: &Path, name: &str) -> anyhow::Result<Option<(String, String)>> {
    let path = dir.join(name);
    Ok(read_optional_text(&path)?.map(|text| (text, path.shown().to_string())))
}

/// The keymap: defaults, with the workspace's `keymap.toml` on top.
pub fn load_keymap(dir: &Path) -> anyhow::Result<Keymap> {
    match optional_file(dir, KEYMAP_FILE)? {
        Some((text, origin)) => Ok(Keymap::with_overlay(&text, &origin)?),
        None => Ok(Keymap::default()),
    }
}

/// The theme: `NO_COLOR` wins; else the workspace's `theme.toml`; else the dark default.
pub fn load_theme(dir: &Path) -> anyhow::Result<Theme> {
    if no_color() {
        return Ok(Theme::plain());
    }
    match optional_file(dir, THEME_FILE)? {
        Some((text, origin)) => Ok(Theme::from_user_file(&text, &origin)?),
        None => Ok(Theme::default()),
    }
}

/// The keymap the console runs with: help lists it, and what it leaves without a key is
/// said in the notes ([`Keymap::warnings`]).
pub fn use_keymap(state: &mut State, keymap: &Keymap) {
    state.help = panes::help::HelpModal::new(keymap);
    state.notes.extend(keymap.warnings().iter().cloned());
}

/// What a key press means now: while the filter or the prompt is being typed, keys are text.
pub fn key_action(state: &State, keymap: &Keymap, ev: &KeyEvent) -> Option<Action> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    if state.help.open {
        return panes::help::key(keymap, ev);
    }
    if state.prompt.attach_path.is_some() {
        // The attach path line: keys are its text.
        return text_line_key(ev);
    }
    if state.focus == Pane::Prompt {
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        return match ev.code {
            KeyCode::Char('c') if ctrl => Some(Action::Quit),
            // The keymap's quit, clear and send keys (and the others help lists for the
            // Prompt), when they are ones a text box would not take as text: a ctrl key bound
            // to quit quits here too, as help says (tester 22 F7). The Sent table's keys give
            // way to the box's own chords (ctrl+p is its line up: tester 50 F10).
            _ if (ctrl || alt)
                && matches!(
                    keymap.typing_action(ev),
                    Some(
                        Action::Quit
                            | Action::ClearPrompt
                            | Action::Send
                            | Action::ToggleAb
                            | Action::NextSent
                            | Action::PrevSent
                            | Action::OpenSent
                            | Action::Attach
                            | Action::RemoveAttachment
                            | Action::NextAttachment
                            | Action::StoreAgain
                    )
                ) =>
            {
                keymap.typing_action(ev)
            }
            KeyCode::Esc => Some(Action::Back),
            KeyCode::Tab => Some(Action::FocusNext),
            KeyCode::BackTab => Some(Action::FocusPrev),
            KeyCode::F(1) => Some(Action::ToggleHelp),
            KeyCode::PageUp => Some(Action::PageUp),
            KeyCode::PageDown => Some(Action::PageDown),
            _ => Some(Action::PromptKey(ratatui_textarea::Input::from(*ev))),
        };
    }
    if !state.filter_editing {
        return keymap.action_for(ev);
    }
    text_line_key(ev)
}

/// A key in a one-line text box (a search, the attach path): text, editing, Enter, Esc;
/// ctrl+c still quits.
fn text_line_key(ev: &KeyEvent) -> Option<Action> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    match ev.code {
        KeyCode::Char('c') if ctrl => Some(Action::Quit),
        KeyCode::Char(c) if !ctrl && !ev.modifiers.contains(KeyModifiers::ALT) => {
            Some(Action::Char(c))
        }
        KeyCode::Backspace => Some(Action::Backspace),
        KeyCode::Enter => Some(Action::Confirm),
        KeyCode::Esc => Some(Action::Back),
        _ => None,
    }
}

/// Keys that follow each other closer than this arrived together (a paste, a burst); a
/// person's keys are tens of milliseconds apart.
pub const BURST_GAP_MS: u64 = 2;

/// A burst of this many keys is a paste: from then on its keys may be [`PASTE_GAP_MS`]
/// apart and still belong to it (a terminal writes a long paste in chunks).
const PASTE_KEYS: usize = 32;
/// How far apart a paste's chunks may come, each measured from the last event of the one
/// before: a terminal over ssh or under load writes a paste in chunks tens of milliseconds
/// apart (tester 11 T11-4: at a 50 ms window, chunks ≈37 ms apart were split in 2 of 3 runs
/// on a loaded machine). No one types 32 keys 2 ms apart and then the next within this.
const PASTE_GAP_MS: u64 = 150;

/// Where keys are text now, as [`key_action`] decides it: the attach path line, the Prompt
/// box, a search; `None` when keys are commands.
fn text_field(state: &State) -> Option<panes::prompt::TextField> {
    use panes::prompt::TextField;
    if state.help.open {
        None
    } else if state.prompt.attach_path.is_some() {
        Some(TextField::Line)
    } else if state.focus == Pane::Prompt {
        Some(TextField::Box)
    } else if state.filter_editing {
        Some(TextField::Line)
    } else {
        None
    }
}

/// A burst of keys, applied in order. While the operator is typing (the Prompt pane or a
/// search), a run of text keys in it is a paste from a terminal without bracketed paste:
/// one insert and one preview, not one per key. In the Prompt box a Tab or Enter in it
/// stays text; in a one-line field (a search, the attach path) an Enter ends the field, as
/// typed, and the keys after it act on what is then in focus.
pub fn apply_keys(state: &mut State, keymap: &Keymap, keys: &[KeyEvent]) -> Vec<Effect> {
    // Below the smallest screen nothing is drawn but the message naming the quit key, so
    // that key (or ctrl+c) is the only one that acts: a `q` pressed as the message asks
    // went into the hidden prompt, and ctrl+s sent it (tester 17 F1).
    if state.too_small() {
        let quits = |k: &KeyEvent| {
            (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))
                || keymap.action_for(k) == Some(Action::Quit)
        };
        if keys.iter().any(quits) {
            return update(state, Action::Quit);
        }
        return Vec::new();
    }
    let mut effects = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        // A burst this long is a paste (`read_input`): in the Prompt box all the rest of it
        // is its text, each key as the bytes it was, so a ctrl+s, esc or ctrl+c in pasted
        // text neither sends, leaves nor quits (tester 11 T11-12, as keys).
        if keys.len() >= PASTE_KEYS && text_field(state) == Some(panes::prompt::TextField::Box) {
            let mut text = String::new();
            for k in &keys[i..] {
                panes::prompt::push_pasted_key(&mut text, k);
            }
            effects.extend(update(state, Action::Paste(text)));
            break;
        }
        if let Some(field) = text_field(state)
            && let Some((text, n)) = panes::prompt::paste_run(&keys[i..], field)
        {
            effects.extend(update(state, Action::Paste(text)));
            i += n;
            continue;
        }
        if let Some(action) = key_action(state, keymap, &keys[i]) {
            effects.extend(update(state, action));
        }
        i += 1;
    }
    effects
}

/// The state a fresh console starts from.
pub fn initial_state(ws: &Workspace) -> State {
    let mut rows = ws.budgets.rows().to_vec();
    rows.push(ws.budgets.fallback().clone());
    let mut state = State::new(
        rows,
        ws.catalog_origin.clone(),
        Arc::new(ws.catalog.render_full()),
        ws.notes.clone(),
    );
    // The clock is the front end's: the History pane says a plan's year when it is not this one.
    state.history.this_year = crate::core::time::year_of(crate::store::now_secs());
    state
}

/// What effects run against: the preview's inputs and the history store's path (`None`
/// when the store could not be opened; the History pane then shows why).
#[derive(Clone)]
pub struct EffectContext {
    pub preview: PreviewContext,
    pub history: Option<PathBuf>,
    /// While the store is being opened at start (`history` is `None` then): what effects
    /// that need it wait for, off the UI thread ([`EffectContext::history_path`]).
    pub opening: Option<StoreOpening>,
    /// Providers and guard for replays, or why they could not be read from the config.
    pub replay: Result<Arc<ReplayContext>, String>,
    /// The workspace: where answers still not stored at quit are written.
    pub workspace: PathBuf,
    /// How long a write to the store waits for another process's write lock
    /// ([`crate::store::sqlite::BUSY_TIMEOUT`]; tests shorten it).
    pub lock_wait: Duration,
}

/// Why an effect that needs the history store has none: it could not be opened (the History
/// pane says why), or is still being opened.
const NO_STORE: &str = "the history store is not open (the History pane says why)";

/// The most quitting waits for the store's write lock to store kept answers, before it
/// writes them to a file instead.
pub const QUIT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The history store's opening at start, shared with the effects spawned meanwhile: a send
/// typed before the store is open waits for it rather than finding none.
#[derive(Clone, Default)]
pub struct StoreOpening(
    Arc<(
        std::sync::Mutex<Option<Option<PathBuf>>>,
        std::sync::Condvar,
    )>,
);

impl StoreOpening {
    /// The open ended: with the store's path, or `None` when it could not be opened.
    fn done(&self, path: Option<PathBuf>) {
        let (lock, ready) = &*self.0;
        if let Ok(mut slot) = lock.lock() {
            *slot = Some(path);
        }
        ready.notify_all();
    }

    /// Wait (blocking) for the open to end: the store's path, or `None` (also when
    /// `cancel` is cancelled meanwhile: a quit does not wait for a send that sent nothing).
    fn wait(&self, cancel: Option<&crate::llm::client::Cancel>) -> Option<PathBuf> {
        let (lock, ready) = &*self.0;
        let mut slot = lock.lock().ok()?;
        loop {
            if let Some(path) = slot.as_ref() {
                return path.clone();
            }
            if cancel.is_some_and(|c| c.is_cancelled()) {
                return None;
            }
            slot = ready.wait_timeout(slot, Duration::from_millis(100)).ok()?.0;
        }
    }
}

impl EffectContext {
    /// The history store's path for an effect, once it is open (waiting for the open at
    /// start, when one is under way); [`NO_STORE`] when it could not be opened.
    pub fn history_path(&self) -> Result<PathBuf, &'static str> {
        self.history_path_unless(None)
    }

    /// [`EffectContext::history_path`], giving up the wait when `cancel` is cancelled.
    fn history_path_unless(
        &self,
        cancel: Option<&crate::llm::client::Cancel>,
    ) -> Result<PathBuf, &'static str> {
        match (&self.history, &self.opening) {
            (Some(path), _) => Ok(path.clone()),
            (None, Some(opening)) => opening.wait(cancel).ok_or(NO_STORE),
            (None, None) => Err(NO_STORE),
        }
    }

    /// The history store for a write that pays or was paid for: opened, waiting at most
    /// `lock_wait` for another process's write lock.
    fn store_for_writing(&self, path: &Path) -> anyhow::Result<HistoryStore> {
        let mut store = store_waiting(path, self.lock_wait)?;
        // The configured keys stay out of what is stored, as `send` keeps them (T12-6).
        store.set_secrets(self.preview.secrets.clone());
        Ok(store)
    }
}

/// The history store at `path`, a write waiting at most `wait` for another process's lock.
fn store_waiting(path: &Path, wait: Duration) -> anyhow::Result<HistoryStore> {
    let mut store = HistoryStore::open(path)?;
    store.set_lock_wait(wait)?;
    Ok(store)
}

/// Store again answers kept as plan lines ([`crate::live::replay::store_kept_line`]),
/// waiting at most `wait` for the write lock: each line's stored id, or why not. After the
/// first that fails the others are not tried (the store would refuse them for the same
/// reason, each after its own wait) and carry that reason.
pub fn store_again(
    ctx: &EffectContext,
    lines: &[String],
    wait: Duration,
) -> Result<unstored::StoredAgain, String> {
    let text = |e: anyhow::Error| crate::exit::said(&e);
    let path = &ctx.history_path()?;
    let rctx = ctx.replay.clone()?;
    // Written out if the process must end while the store waits (`live::in_hand`).
    let _holding = crate::live::in_hand::hold_lines(lines);
    let mut store = store_waiting(path, wait).map_err(text)?;
    let mut failed: Option<String> = None;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let result = match &failed {
            Some(why) => Err(why.clone()),
            None => crate::live::replay::store_kept_line(&mut store, line, &rctx.pipelines)
                .map_err(text),
        };
        match &result {
            Ok(id) => {
                tracing::info!(id = id.as_str(), "stored an answer kept unstored");
                crate::live::in_hand::settled(std::slice::from_ref(line));
            }
            Err(why) if failed.is_none() => {
                tracing::warn!("an answer kept unstored is still not stored: {why}");
                failed = Some(why.clone());
            }
            Err(_) => {}
        }
        out.push(result);
    }
    Ok(out)
}

/// What quitting does with the answers the store could not take: stores them (waiting at
/// most `wait` for the write lock), and writes what still cannot be stored to a private
/// file in the workspace as plan lines `ctxconsole import plans` reads back. Returns what
/// to say on the terminal once the console has closed (each said in the log too) and, when
/// even the file could not be written, the lines themselves, to print whole.
pub fn on_quit(ctx: &EffectContext, state: &mut State, wait: Duration) -> KeptReport {
    let mut report = KeptReport::default();
    if state.unstored.pending.is_empty() {
        return report;
    }
    let lines: Vec<String> = state
        .unstored
        .pending
        .iter()
        .map(|k| k.line.clone())
        .collect();
    let request = crate::tui::request_id::take(&mut state.next_request);
    state.unstored.storing = Some((request, lines.len()));
    let result = store_again(ctx, &lines, wait);
    let stored = state
        .unstored
        .finished(request, result.as_ref().map_err(Clone::clone));
    if !stored.is_empty() {
        let ids: Vec<&str> = stored.iter().map(|(_, id)| id.as_str()).collect();
        report.said.push(format!(
            "stored {} the store could not take before: {}",
            unstored::answers(ids.len()),
            ids.join(", ")
        ));
    }
    let pending = &state.unstored.pending;
    let Some(first) = pending.first() else {
        return report;
    };
    let why = match &result {
        Err(e) => e.clone(),
        Ok(_) => first.why.clone(),
    };
    let kept: Vec<&str> = pending.iter().map(|k| k.line.as_str()).collect();
    let head = format!(
        "{} could not be stored ({why})",
        unstored::answers(kept.len())
    );
    // Written to the file or printed: out of hand either way.
    crate::live::in_hand::settled(&lines);
    let written = keep_unstored(&ctx.workspace, &kept, crate::store::now_secs(), &head, "");
    report.said.extend(written.said);
    report.lines = written.lines;
    report
}

/// Quitting while a send or a live replay is in flight: the calls still out are cancelled
/// (as esc cancels them) and what already came back is stored, or kept for the quit's
/// file when the store cannot take it — never dropped (tester 10 T10-24). Waits at most
/// `wait` (the store's lock wait and a margin) for the cancelled calls to come back; past
/// it, every answer still in hand (`live::in_hand`: back and not stored, or kept) is written
/// to the quit's file (tester 12 T12-7: they were said to be lost, and were).
async fn finish_paid_calls(
    ctx: &EffectContext,
    state: &mut State,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Input>,
    wait: Duration,
) {
    let in_flight = state.paid_calls_in_flight();
    if in_flight.is_empty() {
        return;
    }
    crate::cli::out::eprint_line(&state.quit_wait_line(wait));
    for cancel in in_flight {
        cancel.cancel();
    }
    let deadline = tokio::time::Instant::now() + wait;
    while !state.paid_calls_in_flight().is_empty() {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Input::Action(a @ (Action::Sent(..) | Action::Replayed(..))))) => {
                update(state, a);
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                tracing::warn!("quit: a cancelled send or replay did not come back in time");
                let written = crate::cli::out::write_in_hand(
                    &ctx.workspace,
                    "a cancelled send or replay did not come back in time with",
                );
                if written.is_empty() {
                    crate::cli::out::eprint_line(
                        "ctxconsole: a cancelled send or replay did not come back in time; \
                         no answer of it was back",
                    );
                }
                // Those kept already are in the file: not tried or written again.
                state
                    .unstored
                    .pending
                    .retain(|k| !written.contains(&k.line));
                break;
            }
        }
    }
}

/// How long past the store's lock wait quitting waits for cancelled calls to come back.
const PAID_CALLS_MARGIN: Duration = Duration::from_secs(15);

/// Run a replay: offline on the stored response, or live (stored as a new plan linked to
/// the original). `progress` gets a line whenever the call's state changes.
pub async fn run_replay(
    ctx: &EffectContext,
    req: &ReplayRequest,
    progress: &mut (dyn FnMut(String) + Send),
) -> Result<ReplayResult, String> {
    let text = |e: anyhow::Error| crate::exit::said(&e);
    let path = &ctx.history_path_unless(Some(&req.cancel))?;
    let rctx = ctx.replay.clone()?;
    let store = HistoryStore::open(path).map_err(text)?;
    let plan = store.plan_held(&req.plan_id).map_err(text)?.record;
    let Some(model) = &req.model else {
        return Ok(ReplayResult::Offline(replay_offline(&plan, &rctx.guard())));
    };
    store
        .check_writable("a live replay, which stores every answer (nothing was sent),")
        .map_err(text)?;
    drop(store);
    let mut report = |p: ReplayProgress| progress(p.line(&plan.id));
    let (mut live, record) = replay_live(&rctx, &plan, model, &req.cancel, &mut report)
        .await
        .map_err(text)?;
    // Nothing was sent (no provider, no key): the pane shows why, as for any error.
    if let Some(why) = live.not_sent.take() {
        return Err(why);
    }
    if let Some(record) = record {
        live.store_with(record, &rctx.preview.secrets, |record| {
            ctx.store_for_writing(path)
                .and_then(|mut h| h.insert_replay(record, &rctx.pipelines))
        });
    }
    Ok(ReplayResult::Live(live))
}

/// Reports a send's progress: a call's line by its `model [arm]`, or that every call has
/// answered and only storing is left ([`SendNews`]).
pub type SendReport = Arc<dyn Fn(SendNews) + Send + Sync>;

/// Send the previewed request to each target (and each A/B arm chosen), at most
/// `llm.concurrency` at once, and store every answer as a plan under the caller `console`,
/// the arms linked by one compare_group. With `llm.baseline_model` set, that model is asked
/// too (whole catalog, no planner help, no prior), stored first, and every plan is stored
/// with its gap signal against the baseline's steps.
pub async fn run_send(
    ctx: &EffectContext,
    req: &SendRequest,
    report: SendReport,
) -> Result<SendOutcome, String> {
    use crate::core::compare::Arm;
    use crate::live::send::{
        HistorySink, JobNews, SendAsk, SendStore, call_label, compare_group, plan_send, run_jobs,
    };
    let text = |e: anyhow::Error| crate::exit::said(&e);
    let path = &ctx.history_path_unless(Some(&req.cancel))?;
    let rctx = ctx.replay.clone()?;
    let arms: Vec<Arm> = std::iter::once(Arm::Compacted)
        .chain(req.arms.iter().copied())
        .collect();
    // The Preview's own ask, so the request sent is the one it shows.
    let ask = SendAsk {
        prompt: &req.prompt,
        attachments: &req.attachments,
        defaults: "",
        targets: &req.targets,
        arms: &arms,
        baseline: rctx.providers.baseline_model.as_deref(),
    };
    let jobs = plan_send(&ctx.preview, &ask).map_err(text)?;
    // One store for the send: checked writable before anything goes out, then given every
    // answer (as `ctxconsole send` holds its store).
    let mut store = ctx.store_for_writing(path).map_err(text)?;
    store
        .check_writable("send, which stores every answer (nothing was sent),")
        .map_err(text)?;
    // Said while sending, as `ctxconsole send` says it (tester 9 T9-7).
    if let Some(note) = store.writer_note().map_err(text)? {
        report(SendNews::Line(
            "store".into(),
            format!("{note}; one that cannot be is kept until stored again"),
        ));
    }
    let models: Vec<String> = req.targets.iter().map(|e| e.model.clone()).collect();
    // The stem of every plan this send stores, whenever each answers (tester 36 F2).
    let started = crate::store::now_secs();
    let group = ask
        .comparing()
        .then(|| compare_group(started, &req.prompt, &models, &arms));
    let labels: Vec<String> = jobs
        .iter()
        .map(|j| call_label(&j.model, j.arm, j.baseline))
        .collect();
    let calls_report = Arc::clone(&report);
    let progress: crate::live::send::JobReport = Arc::new(move |i, news: JobNews| {
        if let Some(label) = labels.get(i) {
            calls_report(SendNews::Line(label.clone(), news.line(label)));
        }
    });
    // Each answer is stored as it comes back (tester 22 F4). Once every call has answered,
    // what is left is storing, which esc cannot cancel, and which waits for another
    // process's write lock if one holds it (tester 10 T10-16: the pane still said `Sending…
    // (esc cancels)` and esc did nothing). A failed probe is "not waiting": the write itself
    // then says what is wrong.
    let storing_report = Arc::clone(&report);
    let sink = HistorySink {
        store: &mut store,
        pipelines: &rctx.pipelines,
        started,
    };
    let mut storing =
        SendStore::new(&jobs, started, sink).when_only_storing_is_left(move |waiting| {
            storing_report(SendNews::Storing { waiting });
        });
    run_jobs(
        rctx.clone(),
        jobs,
        CONSOLE_CALLER,
        &req.prompt,
        group.as_deref(),
        &req.cancel,
        progress,
        &mut storing,
    )
    .await
    .map_err(text)?;
    let sent = storing.finish().map_err(text)?;
    let mut results: Vec<SentArm> = sent
        .arms
        .into_iter()
        .map(|a| SentArm {
            model: a.model,
            arm: a.arm,
            live: a.live,
            baseline: false,
            gap: a.gap,
        })
        .collect();
    if let Some(run) = sent.baseline {
        results.push(SentArm {
            model: run.live.model.clone(),
            arm: Arm::Compacted,
            live: run.live,
            baseline: true,
            gap: None,
        });
    }
    Ok(SendOutcome {
        results,
        compare_group: group,
    })
}

/// Run an effect to completion on the calling thread (tests use this directly; a
/// debounce answers at once here, the runtime waits first).
pub fn run_effect_now(ctx: &EffectContext, effect: Effect) -> Action {
    let history = ctx.history_path().ok();
    let history = history.as_deref();
    let whole = ctx;
    let ctx = &ctx.preview;
    match effect {
        Effect::Replay(req) => {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(run_replay(whole, &req, &mut |_| {})));
            Action::Replayed(req.request, result.map(|r| Done(Arc::new(r))))
        }
        Effect::CancelReplay(cancel) => {
            cancel.cancel();
            Action::Resize
        }
        Effect::Send(req) => {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(run_send(whole, &req, Arc::new(|_| {}))));
            Action::Sent(req.request, result.map(|r| Done(Arc::new(r))))
        }
        Effect::StoreAgain(req) => {
            let result = store_again(whole, &req.lines, whole.lock_wait);
            Action::StoredAgain(req.request, result.map(|r| Done(Arc::new(r))))
        }
        Effect::History { request, query } => {
            let (answer, regrouped) = match history {
                Some(path) => match run_query(path, &ctx.budgets, &query) {
                    Ok((a, regrouped)) => (Ok(Done(Arc::new(a))), regrouped),
                    Err(e) => (Err(crate::exit::said(&e)), false),
                },
                None => (Err(NO_STORE.to_string()), false),
            };
            Action::HistoryAnswered(request, answer, regrouped)
        }
        Effect::Plan { generation, inputs } => {
            Action::Planned(generation, Done(Arc::new(plan_snapshot(ctx, &inputs))))
        }
        Effect::After { action, .. } => action,
        Effect::ReadAttachment { request, path } => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let path = attach::typed_path(&path, home.as_deref());
            let result = crate::import::read_attachment(&path, attach::ATTACH_MAX_BYTES)
                .map(|a| Done(Arc::new(a)))
                .map_err(|e| crate::exit::said(&e));
            Action::AttachmentRead(request, result)
        }
    }
}

fn spawn_effects(effects: Vec<Effect>, ctx: &EffectContext, tx: &UnboundedSender<Input>) {
    for effect in effects {
        let ctx = ctx.clone();
        let tx = tx.clone();
        if let Effect::Replay(req) = effect {
            tokio::spawn(async move {
                let progress_tx = tx.clone();
                let mut report = |line: String| {
                    let _ =
                        progress_tx.send(Input::Action(Action::ReplayProgress(req.request, line)));
                };
                let result = run_replay(&ctx, &req, &mut report).await;
                let _ = tx.send(Input::Action(Action::Replayed(
                    req.request,
                    result.map(|r| Done(Arc::new(r))),
                )));
            });
            continue;
        }
        if let Effect::Send(req) = effect {
            tokio::spawn(async move {
                let progress_tx = tx.clone();
                let request = req.request;
                let report: SendReport = Arc::new(move |news| {
                    let _ = progress_tx.send(Input::Action(Action::SendProgress(request, news)));
                });
                let result = run_send(&ctx, &req, report).await;
                let _ = tx.send(Input::Action(Action::Sent(
                    req.request,
                    result.map(|r| Done(Arc::new(r))),
                )));
            });
            continue;
        }
        if let Effect::CancelReplay(cancel) = effect {
            cancel.cancel();
            continue;
        }
        if let Effect::After { delay, action } = effect {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(Input::Action(action));
            });
            continue;
        }
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(Input::Action(run_effect_now(&ctx, effect)));
        });
    }
}

enum Input {
    /// Key presses that arrived together (one, when typed by a person).
    Keys(Vec<KeyEvent>),
    Mouse(event::MouseEvent),
    Action(Action),
    /// The semantic layer, built off the UI thread, or why it could not be.
    Semantic(Result<Arc<Semantic>, String>),
    /// The history store, opened off the UI thread (or why it could not be).
    HistoryOpened(Box<OpenedHistory>),
    /// A terminating signal (SIGHUP, SIGTERM, …) from the signal thread: the console ends
    /// as a quit does, then the process with 128 + its number ([`terminal::terminated_by`]).
    Terminate,
}

/// How often the thread reading the terminal looks whether the console has ended.
const READ_POLL_MS: u64 = 100;

/// Where the console's input comes from: the terminal (crossterm's reader), or in tests a
/// script of timed events.
trait EventSource {
    /// Whether an event is there to read within `timeout`.
    fn poll(&mut self, timeout: Duration) -> std::io::Result<bool>;
    fn read(&mut self) -> std::io::Result<Event>;
}

/// The terminal, through crossterm.
struct TerminalEvents;

impl EventSource for TerminalEvents {
    fn poll(&mut self, timeout: Duration) -> std::io::Result<bool> {
        event::poll(timeout)
    }
    fn read(&mut self) -> std::io::Result<Event> {
        event::read()
    }
}

/// What the terminal sent next, as input: key presses that arrive within
/// [`BURST_GAP_MS`] of each other are read as one burst, and once it holds [`PASTE_KEYS`]
/// keys it is a paste whose chunks may come [`PASTE_GAP_MS`] apart. A bracketed paste takes
/// in, as its text, the keys and pastes that follow it within [`PASTE_GAP_MS`]: a paste
/// holding the end marker `ESC[201~` ends early, and what came after the marker arrives as
/// keys, which must not act (tester 11 T11-12: `…\x1b[201~\x13` sent the prompt,
/// `…\x1b[201~\tq` quit). `pending` holds an event read while looking for the end of a
/// burst.
fn read_input(
    source: &mut impl EventSource,
    pending: &mut Option<Event>,
) -> std::io::Result<Option<Input>> {
    let ev = match pending.take() {
        Some(ev) => ev,
        None => source.read()?,
    };
    Ok(match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => {
            let mut keys = vec![k];
            let mut gap = Duration::from_millis(BURST_GAP_MS);
            // Each wait starts after the last event read: the gap is measured from the end
            // of the chunk before, however many keys it held.
            while source.poll(gap)? {
                match source.read()? {
                    Event::Key(k) if k.kind == KeyEventKind::Press => {
                        keys.push(k);
                        // No one types this many keys 2 ms apart: a paste, whose chunks a
                        // busy terminal may write further apart (tester 10 T10-22).
                        if keys.len() == PASTE_KEYS {
                            gap = Duration::from_millis(PASTE_GAP_MS);
                        }
                    }
                    Event::Key(_) => {}
                    other => {
                        *pending = Some(other);
                        break;
                    }
                }
            }
            Some(Input::Keys(keys))
        }
        Event::Paste(mut text) => {
            while source.poll(Duration::from_millis(PASTE_GAP_MS))? {
                match source.read()? {
                    Event::Key(k) if k.kind == KeyEventKind::Press => {
                        panes::prompt::push_pasted_key(&mut text, &k);
                    }
                    Event::Key(_) => {}
                    Event::Paste(more) => text.push_str(&more),
                    other => {
                        *pending = Some(other);
                        break;
                    }
                }
            }
            Some(Input::Action(Action::Paste(text)))
        }
        Event::Resize(..) => Some(Input::Action(Action::Resize)),
        Event::Mouse(m) => Some(Input::Mouse(m)),
        _ => None,
    })
}

pub fn run(workspace: Option<PathBuf>, store: StoreChoice) -> anyhow::Result<()> {
    let ws = Workspace::open(&WorkspaceOptions {
        dir: workspace,
        registry: None,
    })?;
    // A bad keymap or theme is said (exit 2) whether or not there is a terminal to draw on.
    let keymap = load_keymap(&ws.dir)?;
    let theme = load_theme(&ws.dir)?;
    // So is a bad config.toml: the console would otherwise start and fail later, at a send
    // or in History, under another message. Read once, here: everything at start takes
    // this one.
    let config = ws.config()?;
    crate::llm::provider::Providers::from_config(&config, &ws.config_origin())?;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(bad_input(
            "the console needs a terminal; for scripts use a subcommand (ctxconsole budgets --json, ctxconsole compact --json)",
        ));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let ended = rt.block_on(event_loop(ws, config, store, keymap, theme));
    // Every answer back is stored or written out by now (the event loop's ending sees to
    // it). A blocking task may still wait inside SQLite for another process's write lock —
    // a store the quit gave up on, whose answer is already in the unstored-plans file —
    // and dropping the runtime would wait for it, up to the whole lock wait, after the
    // console said it was done. Its transaction is rolled back by SQLite if it is cut off.
    rt.shutdown_timeout(RUNTIME_SHUTDOWN);
    ended
}

/// How often the console draws again while the history store is being opened.
const OPENING_REDRAW: Duration = Duration::from_millis(250);

/// How long the console's end waits for blocking tasks still running (see [`run`]).
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(2);

/// The context effects run in, and the state to start from, with the workspace's `config`
/// as read once at start. A history store that cannot be opened leaves the other panes
/// working; the History pane says why. The store is opened here, on the calling thread:
/// the console itself opens it off the UI thread ([`start_opening`], [`open_history`],
/// [`history_opened`]).
pub fn start(
    ws: &Workspace,
    config: &Config,
    store: &StoreChoice,
    store_briefings: bool,
) -> (EffectContext, State) {
    let (mut ctx, mut state) = start_opening(ws, config, store, store_briefings);
    let opened = open_history(ws, config, store, ctx.lock_wait);
    history_opened(ws, config, &mut ctx, &mut state, opened);
    (ctx, state)
}

/// The context and state before the history store is open: every pane but History works,
/// and History says the store is being opened (tester 22 F3: a store another process held
/// locked left the console blank, deaf to ctrl+c and q, for the whole lock wait).
pub fn start_opening(
    ws: &Workspace,
    config: &Config,
    store: &StoreChoice,
    store_briefings: bool,
) -> (EffectContext, State) {
    let mut state = initial_state(ws);
    let preview = ws.preview_context(store_briefings);
    state.history.opening = Some(format!(
        "Opening the history store {}…",
        ws.history_path(store.path.as_deref()).shown()
    ));
    let replay = ReplayContext::with_config(ws, config, preview.clone())
        .map(Arc::new)
        .map_err(|e| crate::exit::said(&e));
    let ctx = EffectContext {
        preview,
        history: None,
        opening: Some(StoreOpening::default()),
        replay,
        workspace: ws.dir.clone(),
        lock_wait: crate::store::sqlite::BUSY_TIMEOUT,
    };
    (ctx, state)
}

/// What opening the history store at start gave: its path (or why it could not be opened),
/// the ranking and past plans read from it, and notes on what could not be read.
pub struct OpenedHistory {
    pub store: Result<PathBuf, String>,
    ranking: Option<crate::workspace::HistoryRanking>,
    past_steps: Option<Arc<crate::core::past_steps::PastStepsIndex>>,
    notes: Vec<String>,
}

/// Open the history store the console works on (creating or seeding it when new), waiting
/// at most `wait` for another process's lock, and read what ranking takes from it. Blocks:
/// the console runs it off the UI thread.
pub fn open_history(
    ws: &Workspace,
    config: &Config,
    store: &StoreChoice,
    wait: Duration,
) -> OpenedHistory {
    let mut opened = OpenedHistory {
        store: Err(String::new()),
        ranking: None,
        past_steps: None,
        notes: Vec::new(),
    };
    match ws.open_history_waiting(store, config, wait) {
        Ok(h) => {
            match ws.history_ranking(&h) {
                Ok(ranking) => opened.ranking = Some(ranking),
                Err(e) => opened.notes.push(format!(
                    "ranking without the history prior: {}",
                    crate::exit::Said(&e)
                )),
            }
            match ws.past_steps(&h) {
                Ok(steps) => opened.past_steps = Some(Arc::new(steps)),
                Err(e) => opened
                    .notes
                    .push(format!("sending no past plans: {}", crate::exit::Said(&e))),
            }
            opened.store = Ok(h.path().to_path_buf());
        }
        Err(e) => opened.store = Err(crate::exit::said(&e)),
    }
    opened
}

/// The history store is open (or could not be): effects from now on use it, the requests
/// are ranked with its prior, and the History pane shows it (or why not). The caller plans
/// the request again.
pub fn history_opened(
    ws: &Workspace,
    config: &Config,
    ctx: &mut EffectContext,
    state: &mut State,
    opened: OpenedHistory,
) {
    state.history.opening = None;
    if let Some(ranking) = opened.ranking {
        ranking.apply(&mut ctx.preview);
    }
    if let Some(steps) = opened.past_steps {
        ctx.preview.past_steps = Some(steps);
    }
    state.notes.extend(opened.notes);
    match opened.store {
        Ok(path) => ctx.history = Some(path),
        Err(e) => state.history.error = Some(e),
    }
    // Effects spawned meanwhile were waiting for it.
    if let Some(opening) = ctx.opening.take() {
        opening.done(ctx.history.clone());
    }
    // A store created now (empty or seeded), a store others can read: said in the notes.
    state.notes.extend(crate::fsio::take_notices());
    // Live replays and sends rank as the Preview does.
    ctx.replay = ReplayContext::with_config(ws, config, ctx.preview.clone())
        .map(Arc::new)
        .map_err(|e| crate::exit::said(&e));
}

/// The semantic layer the workspace's `config` (read once at start) asks for, as a job to
/// run off the UI thread; the state says what is happening (embedding, or why the spec
/// cannot be used). `None`: nothing to run (off, or a spec that cannot be read).
pub fn start_semantic(ws: &Workspace, config: &Config, state: &mut State) -> Option<SemanticJob> {
    match SemanticJob::for_config(ws, config) {
        Ok(Some(job)) => {
            state.semantic = job.status();
            Some(job)
        }
        Ok(None) => None,
        Err(why) => {
            state.semantic = SemanticStatus::Failed(why);
            None
        }
    }
}

/// The semantic layer's job came back: with a layer, every request from now on is ranked
/// with it and the current one is planned again; with an error, the status line says it
/// and the console goes on lexically.
pub fn semantic_ready(
    ctx: &mut EffectContext,
    state: &mut State,
    result: Result<Arc<Semantic>, String>,
) -> Vec<Effect> {
    let status = match result {
        Ok(layer) => {
            // Named as configured (`endpoint:MODEL`), as it was while embedding.
            let embedder = match &state.semantic {
                SemanticStatus::Embedding { embedder, .. } => embedder.clone(),
                _ => layer.embedder_id().to_string(),
            };
            let status = SemanticStatus::On {
                embedder,
                embedded_now: layer.embedded_now,
                entries: layer.entry_count(),
                not_cached: layer.not_cached_note(),
            };
            ctx.preview.semantic = Some(layer);
            status
        }
        Err(why) => SemanticStatus::Failed(why),
    };
    update(state, Action::SemanticLayer(status))
}

async fn event_loop(
    ws: Workspace,
    config: Config,
    store: StoreChoice,
    keymap: Keymap,
    theme: Theme,
) -> anyhow::Result<()> {
    let mut guard = terminal::TerminalGuard::new()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Input>();
    // From here until the loop ends, a terminating signal comes in as an input: the console
    // takes the quit's way out (nothing already paid for is lost), then exits 128 + signal.
    let terminate_tx = tx.clone();
    let on_signal = terminal::on_terminate(move |_signal| {
        let _ = terminate_tx.send(Input::Terminate);
    });

    let input_tx = tx.clone();
    // crossterm's read blocks, so it lives on its own thread and forwards what it reads.
    // It stops once the loop has ended: on a terminal that is gone (its window closed)
    // crossterm's wait for input spins, and finishing may take a while.
    let reading = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let still_reading = Arc::clone(&reading);
    std::thread::spawn(move || {
        let mut pending = None;
        while still_reading.load(std::sync::atomic::Ordering::SeqCst) {
            if pending.is_none() {
                match TerminalEvents.poll(Duration::from_millis(READ_POLL_MS)) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(_) => break,
                }
            }
            let input = match read_input(&mut TerminalEvents, &mut pending) {
                Ok(Some(input)) => input,
                Ok(None) => continue,
                Err(_) => break,
            };
            if input_tx.send(input).is_err() {
                break;
            }
        }
    });
    // The exact tokenizers' tables take 100–160 ms to build; built here, at start, the
    // first selection of an o200k or cl100k model finds them ready instead of waiting.
    std::thread::spawn(|| {
        for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k] {
            crate::core::tokens::warm_up(tokenizer);
        }
    });
    // The terminal is the console's now: notices about files go to its notes line.
    crate::fsio::hold_notices();
    let (mut ctx, mut state) = start_opening(&ws, &config, &store, true);
    // Opened off the UI thread: a store another process holds locked is waited for while
    // the console draws and its keys work (tester 22 F3).
    let ws = Arc::new(ws);
    {
        let (ws, config, store, tx) = (Arc::clone(&ws), config.clone(), store.clone(), tx.clone());
        let wait = ctx.lock_wait;
        std::thread::spawn(move || {
            let opened = open_history(&ws, &config, &store, wait);
            let _ = tx.send(Input::HistoryOpened(Box::new(opened)));
        });
    }
    // A signal that ends the process at once (a second one while finishing) first writes
    // out the answers still being stored.
    let workspace = ctx.workspace.clone();
    let _last_words = terminal::before_ending_at_once(move || {
        crate::cli::out::write_in_hand(&workspace, "ended while storing");
    });
    use_keymap(&mut state, &keymap);
    if let Some(job) = start_semantic(&ws, &config, &mut state) {
        // Opening a local model and embedding a catalog the first time can take a minute.
        let semantic_tx = tx.clone();
        std::thread::spawn(move || {
            let _ = semantic_tx.send(Input::Semantic(job.run()));
        });
    }
    spawn_effects(state.replan(), &ctx, &tx);
    // A terminal that fails (gone with its window) ends the loop too, and the answers
    // already back are still stored below before the error is said.
    let mut ended: anyhow::Result<()> = Ok(());
    loop {
        // Notices from effects (the cache created, or found readable by others).
        let notices = crate::fsio::take_notices();
        // While the store is being opened, History says what it waits for.
        if let Some(opening) = state.history.opening.as_mut() {
            for n in &notices {
                opening.push('\n');
                opening.push_str(n);
            }
        }
        state.notes.extend(notices);
        let size = match guard.terminal.size() {
            Ok(size) => size,
            Err(e) => {
                ended = Err(anyhow::Error::new(e).context("reading the terminal's size"));
                break;
            }
        };
        state.resized(size.width, size.height);
        if let Err(e) = guard.draw(|f| ui::draw(f, &state, &theme, &keymap)) {
            ended = Err(e.context("drawing the console"));
            break;
        }
        let first = if state.history.opening.is_some() {
            // Drawn again now and then while the store is opened, so a notice that it waits
            // for another process's lock shows when it is said.
            match tokio::time::timeout(OPENING_REDRAW, rx.recv()).await {
                Ok(Some(input)) => input,
                Ok(None) => break,
                Err(_) => continue,
            }
        } else {
            let Some(first) = rx.recv().await else { break };
            first
        };
        let mut inputs = vec![first];
        // Everything already waiting is applied before the next frame: one redraw for a burst.
        while let Ok(more) = rx.try_recv() {
            inputs.push(more);
        }
        for input in inputs {
            let effects = match input {
                Input::Keys(keys) => apply_keys(&mut state, &keymap, &keys),
                Input::Mouse(m) => {
                    let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                    let mut effects = Vec::new();
                    for action in panes::mouse::actions(&state, area, &m) {
                        effects.extend(update(&mut state, action));
                    }
                    effects
                }
                Input::Action(a) => update(&mut state, a),
                Input::Semantic(result) => semantic_ready(&mut ctx, &mut state, result),
                Input::HistoryOpened(opened) => {
                    history_opened(&ws, &config, &mut ctx, &mut state, *opened);
                    let mut effects = state.replan();
                    effects.extend(state.focused());
                    effects
                }
                Input::Terminate => update(&mut state, Action::Quit),
            };
            spawn_effects(effects, &ctx, &tx);
        }
        if state.quit {
            break;
        }
    }
    // Finishing after a quit or a signal: a signal now ends the process at once. After a
    // terminal that failed (gone with its window) its SIGHUP may still be on the way: that
    // one is still handed in (the answers already back are stored), a second ends at once.
    let _on_signal = if ended.is_ok() {
        drop(on_signal);
        None
    } else {
        Some(on_signal)
    };
    reading.store(false, std::sync::atomic::Ordering::SeqCst);
    // Restoring a terminal that is gone (SIGHUP) fails; its errors are ignored.
    drop(guard);
    finish_paid_calls(&ctx, &mut state, &mut rx, ctx.lock_wait + PAID_CALLS_MARGIN).await;
    // A try to store kept answers still in flight is waited for: trying them again beside
    // it could store one twice.
    if state.unstored.storing.is_some() {
        crate::cli::out::eprint_line(&format!(
            "ctxconsole: waiting for the try to store {} in flight (at most {} s)…",
            unstored::answers(state.unstored.pending.len()),
            ctx.lock_wait.as_secs()
        ));
    }
    while state.unstored.storing.is_some() {
        match rx.recv().await {
            Some(Input::Action(a @ Action::StoredAgain(..))) => {
                update(&mut state, a);
            }
            Some(_) => {}
            None => break,
        }
    }
    if !state.unstored.pending.is_empty() {
        let wait = ctx.lock_wait.min(QUIT_LOCK_WAIT);
        crate::cli::out::eprint_line(&format!(
            "ctxconsole: storing {} the store could not take (waiting at most {} s for its \
             write lock)…",
            unstored::answers(state.unstored.pending.len()),
            wait.as_secs()
        ));
        let report = on_quit(&ctx, &mut state, wait);
        for line in &report.said {
            crate::cli::out::eprint_line(&format!("ctxconsole: {line}"));
        }
        // Lines no file could take, printed whole: a failure to print them is said (unless
        // the console already ends with an error), and a signal still sets the exit code.
        if let Err(e) = crate::cli::out::print_plan_lines(&report.lines) {
            ended = ended.and(Err(e));
        }
    }
    if let Some(signal) = terminal::terminated_by() {
        return Err(anyhow::Error::new(crate::exit::Interrupted::by(signal)));
    }
    ended
}

/// A test terminal's screen as one string, cell by cell: what the panes' tests search.
#[cfg(test)]
pub(crate) fn screen_text(terminal: &ratatui::Terminal<ratatui::backend::TestBackend>) -> String {
    terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_keymap_and_theme_overlay_or_fail_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load_keymap(dir.path()).unwrap().help_lines(),
            Keymap::default().help_lines()
        );
        std::fs::write(dir.path().join(KEYMAP_FILE), "[keys]\n\"x\" = \"quit\"\n").unwrap();
        let k = load_keymap(dir.path()).unwrap();
        assert!(
            k.help_lines()
                .iter()
                .any(|(keys, d)| keys.contains('x') && *d == "quit")
        );
        std::fs::write(
            dir.path().join(THEME_FILE),
            "name = \"light\"\n[roles]\nbase = { fg = 7 }\n",
        )
        .unwrap();
        let err = load_theme(dir.path()).unwrap_err().to_string();
        assert!(err.contains("theme.toml: line 3"), "{err}");
        assert_eq!(
            crate::exit::code_for(&load_theme(dir.path()).unwrap_err()),
            2
        );
    }

    /// Events at set times (milliseconds from the start), read on a clock of the script's
    /// own: a poll that finds the next event within its timeout moves the clock to it, one
    /// that does not moves it by the whole timeout.
    struct Script {
        events: std::collections::VecDeque<(u64, Event)>,
        now: u64,
    }

    impl EventSource for Script {
        fn poll(&mut self, timeout: Duration) -> std::io::Result<bool> {
            let wait = timeout.as_millis() as u64;
            match self.events.front() {
                Some((at, _)) if *at <= self.now + wait => {
                    self.now = self.now.max(*at);
                    Ok(true)
                }
                _ => {
                    self.now += wait;
                    Ok(false)
                }
            }
        }
        fn read(&mut self) -> std::io::Result<Event> {
            let (at, ev) = self
                .events
                .pop_front()
                .ok_or_else(|| std::io::Error::other("the script has ended"))?;
            self.now = self.now.max(at);
            Ok(ev)
        }
    }

    fn key(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn typed(text: &str, at: u64) -> Vec<(u64, Event)> {
        text.chars().map(|c| (at, key(c))).collect()
    }

    /// The inputs the reader makes of `events`, each as text: `keys:` and the keys' text
    /// (other keys as `<Tab>`, `<C-s>`), or `paste:` and the paste's text.
    fn read_all(events: Vec<(u64, Event)>) -> Vec<String> {
        let mut script = Script {
            events: events.into(),
            now: 0,
        };
        let mut pending = None;
        let mut out = Vec::new();
        while pending.is_some() || !script.events.is_empty() {
            match read_input(&mut script, &mut pending).unwrap() {
                Some(Input::Keys(keys)) => out.push(format!(
                    "keys:{}",
                    keys.iter()
                        .map(|k| match k.code {
                            KeyCode::Char(c) if k.modifiers.is_empty() => c.to_string(),
                            KeyCode::Char(c) => format!("<C-{c}>"),
                            other => format!("<{other:?}>"),
                        })
                        .collect::<String>()
                )),
                Some(Input::Action(Action::Paste(text))) => out.push(format!("paste:{text}")),
                Some(_) => out.push("other".into()),
                None => {}
            }
        }
        out
    }

    /// Tester 11 T11-12: a bracketed paste holding the end marker `ESC[201~` ended there, and
    /// what followed the marker came as keys: ctrl+s sent the prompt, Tab then `q` quit.
    /// Keys in the paste's burst are its text, as the bytes they were; a key after a pause
    /// is a key.
    #[test]
    fn keys_in_the_burst_after_a_bracketed_paste_are_its_text() {
        let ctrl_s = Event::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
        let tab = Event::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        assert_eq!(
            read_all(vec![
                (0, Event::Paste("summarise this log line please".into())),
                (0, ctrl_s.clone()),
            ]),
            ["paste:summarise this log line please\x13"]
        );
        assert_eq!(
            read_all(vec![
                (0, Event::Paste("hello there".into())),
                (1, tab.clone()),
                (1, key('q')),
                (3, Event::Paste(" and more".into())),
            ]),
            ["paste:hello there\tq and more"]
        );
        let esc = Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        let alt_x = Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::ALT));
        assert_eq!(
            read_all(vec![(0, Event::Paste("a".into())), (5, esc), (6, alt_x)]),
            ["paste:a\x1b\x1bx"]
        );
        // Typed after a pause, a key acts.
        assert_eq!(
            read_all(vec![(0, Event::Paste("hello".into())), (400, ctrl_s)]),
            ["paste:hello", "keys:<C-s>"]
        );
    }

    /// Tester 11 T11-4: a paste typed as keys in chunks ≈37 ms apart was split into several
    /// attachments on a loaded machine. Once a burst is a paste, chunks up to
    /// `PASTE_GAP_MS` apart (each from the last key of the one before) stay in it.
    #[test]
    fn a_paste_typed_in_chunks_stays_one_burst_while_the_chunks_keep_coming() {
        let line = "L001 2026-11-26T10:00:00Z INFO worker id=000001 status=ok......\n";
        assert_eq!(line.len(), 64);
        let mut events = Vec::new();
        let mut at = 0;
        for _ in 0..6 {
            events.extend(typed(line, at));
            at += 120;
        }
        // A key after a pause longer than a chunk's gap acts on its own.
        let after = at - 120 + PASTE_GAP_MS + 50;
        events.push((
            after,
            Event::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)),
        ));
        let read = read_all(events);
        assert_eq!(read.len(), 2, "{read:#?}");
        assert_eq!(read[0], format!("keys:{}", line.repeat(6)));
        assert_eq!(read[1], "keys:<Tab>");

        // Typed key by key (7 ms apart), every key is its own burst, and a Tab 100 ms after
        // the last one is a key (it leaves the Prompt).
        let mut events: Vec<(u64, Event)> = "summarise the log of the worker that failed at ten"
            .chars()
            .enumerate()
            .map(|(i, c)| (i as u64 * 7, key(c)))
            .collect();
        let last = events.last().map_or(0, |(at, _)| *at);
        events.push((
            last + 100,
            Event::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)),
        ));
        let read = read_all(events);
        assert_eq!(read.len(), 51, "{read:#?}");
        assert_eq!(read[50], "keys:<Tab>");
    }

    /// A console's state on an empty workspace, and the default keymap.
    fn console_state() -> (State, Keymap) {
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(tempfile::tempdir().unwrap().path().into()),
            registry: None,
        })
        .unwrap();
        (initial_state(&ws), Keymap::default())
    }

    /// Tester 22 F7: with `"ctrl+s" = "quit"` help listed ctrl+s as quit, yet in the Prompt
    /// pane it did nothing; and nothing said that send had lost its only key. It quits there
    /// as everywhere, and the notes name send and the key it lost.
    #[test]
    fn a_ctrl_key_bound_to_quit_quits_in_the_prompt_and_a_lost_action_is_in_the_notes() {
        let (mut state, _) = console_state();
        let keymap = Keymap::with_overlay(
            "[keys]\n\"ctrl+s\" = \"quit\"\n\"q\" = \"none\"\n",
            "keymap.toml",
        )
        .unwrap();
        use_keymap(&mut state, &keymap);
        assert!(
            state
                .notes
                .iter()
                .any(|n| n.starts_with("keymap.toml: send (") && n.contains("took ctrl+s")),
            "{:?}",
            state.notes
        );
        assert!(
            keymap
                .help_lines()
                .iter()
                .any(|(keys, what)| keys.contains("ctrl+s") && *what == "quit"),
            "help lists ctrl+s as quit"
        );
        update(&mut state, Action::FocusPrompt);
        for c in "hello".chars() {
            let ev = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            let action = key_action(&state, &keymap, &ev).unwrap();
            update(&mut state, action);
        }
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(key_action(&state, &keymap, &ctrl_s), Some(Action::Quit));
        update(&mut state, Action::Quit);
        assert!(state.quit);
    }

    /// Tester 11 T11-12 for a paste that comes as keys (no bracketed paste): in a burst long
    /// enough to be a paste, a ctrl+s, Tab, esc or ctrl+c in the Prompt box is pasted text,
    /// never the send, leave or quit key.
    #[test]
    fn action_keys_in_a_burst_that_is_a_paste_are_its_text_in_the_prompt_box() {
        let (mut state, keymap) = console_state();
        update(&mut state, Action::FocusPrompt);
        let plain = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        let mut keys: Vec<KeyEvent> = "summarise this log line for me please"
            .chars()
            .map(plain)
            .collect();
        keys.extend([
            ctrl('s'),
            KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE),
            plain('q'),
            KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
            ctrl('c'),
        ]);
        let effects = apply_keys(&mut state, &keymap, &keys);
        assert!(
            !effects.iter().any(|e| matches!(e, Effect::Send(_))),
            "{effects:?}"
        );
        assert!(!state.quit);
        assert_eq!(state.focus, Pane::Prompt);
        let text = state.prompt.text();
        assert!(
            text.starts_with("summarise this log line for me please") && text.contains("\\x13"),
            "{text:?}"
        );
        // A short burst, as a person's chord: keys act.
        apply_keys(&mut state, &keymap, &[ctrl('c')]);
        assert!(state.quit);
    }

    #[test]
    fn keys_are_text_while_filtering() {
        let (mut state, keymap) = console_state();
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(key_action(&state, &keymap, &q), Some(Action::Quit));
        update(&mut state, Action::Filter);
        assert_eq!(key_action(&state, &keymap, &q), Some(Action::Char('q')));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(key_action(&state, &keymap, &ctrl_c), Some(Action::Quit));
    }

    /// Tester 12 T12-7: a quit whose cancelled send did not come back in time said "what it
    /// had not stored is lost", and it was: the answers back (one waiting for the store,
    /// another waiting behind it) and those kept were dropped. Past the wait, every answer in
    /// hand is written to the quit's private file, once, and not tried again after.
    #[test]
    fn a_quit_that_gives_up_waiting_writes_every_answer_in_hand_to_a_file() {
        use std::os::unix::fs::PermissionsExt;
        let _one = crate::live::in_hand::TESTS
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&WorkspaceOptions {
            dir: Some(dir.path().into()),
            registry: None,
        })
        .unwrap();
        let (ctx, mut state) = start(&ws, &ws.config().unwrap(), &Default::default(), false);
        // A send that never comes back, with one answer being stored and one kept.
        state.send.running = Some((7, crate::llm::client::Cancel::default()));
        let back = r#"{"id":"t12-7-being-stored"}"#.to_string();
        let kept = r#"{"id":"t12-7-kept"}"#.to_string();
        let _storing = crate::live::in_hand::hold_lines(std::slice::from_ref(&back));
        crate::live::in_hand::hold_lines(&[]).keep(&kept);
        state.unstored.pending.push(unstored::KeptAnswer {
            label: "test/ok-json [full]".into(),
            line: kept.clone(),
            why: "another process held the write lock".into(),
        });
        let (_tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Input>();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(finish_paid_calls(
                &ctx,
                &mut state,
                &mut rx,
                Duration::from_millis(50),
            ));
        let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains("unstored-plans-"))
            .collect();
        let [file] = files.as_slice() else {
            panic!("one file for the answers in hand: {files:?}")
        };
        let text = std::fs::read_to_string(file).unwrap();
        for line in [&back, &kept] {
            assert_eq!(text.lines().filter(|l| l == line).count(), 1, "{text}");
        }
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(
            state.unstored.pending.is_empty(),
            "in the file: not stored again nor written again at quit"
        );
        assert!(!crate::live::in_hand::lines_in_hand().contains(&kept));
    }
}
