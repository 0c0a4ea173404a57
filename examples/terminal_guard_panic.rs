//! The console's terminal guard around a drawing loop that fails on the first key: a panic on
//! a worker thread (`terminal_guard_panic worker`) or on the main thread (`… main`), or an
//! error returned from main (`… error`); until then it goes on drawing. tests/tui_tmux.rs runs
//! it in tmux and checks the terminal comes back.

use ctxconsole::tui::terminal::TerminalGuard;
use ratatui::crossterm::event::{self, Event};
use ratatui::widgets::Paragraph;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let thread = std::env::args().nth(1).unwrap_or_else(|| "worker".into());
    let mut guard = TerminalGuard::new()?;
    let mut pressed = false;
    for tick in 0u64.. {
        guard.draw(|f| {
            f.render_widget(Paragraph::new(format!("guard up · tick {tick}")), f.area())
        })?;
        if event::poll(Duration::from_millis(50))? && matches!(event::read()?, Event::Key(_)) {
            if pressed {
                continue;
            }
            pressed = true;
            match thread.as_str() {
                "main" => panic!("example panic on the main thread"),
                "error" => anyhow::bail!("example error"),
                _ => {
                    std::thread::spawn(|| panic!("example panic on a worker thread"));
                }
            }
        }
    }
    Ok(())
}
