//! Tester 22 F3: a history store another process holds in SQLite's exclusive locking mode
//! (no one else can even read it). The console draws and takes keys while it waits for the
//! store, the History pane says what it waits for, and the wait's end names the lock — never
//! "not a ctxconsole history store … move it aside". The store is left as it was.

mod common;

use common::console::render;
use ctxconsole::tui::action::Action;
use ctxconsole::tui::app::update;
use ctxconsole::tui::{history_opened, open_history, start_opening};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use std::time::Duration;

#[test]
fn a_store_held_locked_is_waited_for_while_the_console_works_and_then_named_as_locked() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(home.path().into()),
        registry: None,
    })
    .unwrap();
    let config = ws.config().unwrap();
    let store = Default::default();
    drop(ws.open_history(&store).unwrap());
    let path = home.path().join("history.sqlite");
    let before = std::fs::read(&path).unwrap();
    // The console holds notices for its notes line, as it does once it owns the terminal.
    ctxconsole::fsio::hold_notices();
    let holder = common::hold_exclusively(&path);

    let (mut ctx, mut state) = start_opening(&ws, &config, &store, false);
    assert!(ctx.history.is_none());
    // History asks nothing of a store still being opened, and says what it is doing.
    assert!(update(&mut state, Action::FocusHistory).is_empty());
    let screen = render(&state, 140, 40);
    assert!(
        screen.contains(&format!("Opening the history store {}…", path.display())),
        "{screen}"
    );

    // The wait, shortened as a test may (the console waits BUSY_TIMEOUT).
    let opened = open_history(&ws, &config, &store, Duration::from_millis(300));
    history_opened(&ws, &config, &mut ctx, &mut state, opened);
    assert!(ctx.history.is_none());
    let said = state.history.error.clone().unwrap();
    assert_eq!(
        said,
        format!(
            "another process holds {} locked (waited 300 ms): the history store could not be \
             read, and nothing was changed; try again once it lets go",
            path.display()
        )
    );
    assert!(!said.contains("not a ctxconsole"), "{said}");
    // Said up front, before the wait started.
    assert!(
        state.notes.iter().any(|n| n
            == &format!(
                "another process holds {} locked now; waiting up to 300 ms for it",
                path.display()
            )),
        "{:?}",
        state.notes
    );
    let screen = render(&state, 140, 40);
    assert!(screen.contains("another process holds"), "{screen}");
    assert!(!screen.contains("move it aside"), "{screen}");
    // The keys still work.
    update(&mut state, Action::Quit);
    assert!(state.quit);

    drop(holder);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the store is untouched"
    );
    let (mut ctx, mut state) = start_opening(&ws, &config, &store, false);
    let opened = open_history(&ws, &config, &store, Duration::from_millis(300));
    history_opened(&ws, &config, &mut ctx, &mut state, opened);
    assert_eq!(ctx.history.as_deref(), Some(path.as_path()));
    assert!(state.history.error.is_none() && state.history.opening.is_none());
    assert!(!update(&mut state, Action::FocusHistory).is_empty());
}
