//! The help modal, read from the live keymap: a remapped key shows as remapped. Help is
//! modal: while it is open it takes every key (it scrolls; esc or ? closes it; ctrl+c still
//! quits), so nothing typed there reaches a pane. It owns its state, its handling of
//! actions and its draw.
//!
//! It opens with the console's status in full, wrapped: the semantic layer's state, answers
//! waiting to be stored and every note. The status line has one row and cuts them at the
//! terminal's edge (tester 14 F11: a semantic layer's failure reason was never readable).

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::keymap::Keymap;
use crate::tui::panes::scroll::{Extent, scrolled};
use crate::tui::panes::{clip, pane_block, shown, wrap};
use crate::tui::theme::Theme;

/// Keys that are not in the keymap (text boxes, the modal itself, the mouse).
const FIXED: &[(&str, &str)] = &[
    ("", ""),
    ("esc, ?", "close this help (it takes every other key)"),
    ("j/k, ↑/↓, pgup/pgdn", "scroll this help"),
    ("typing", "in Prompt and in a search, keys are text"),
    ("esc, tab", "leave the Prompt pane; esc clears a search"),
    ("ctrl+c", "quit, even while typing"),
    ("mouse", "click: focus a pane, pick a row · wheel: scroll"),
];

/// The widest the modal gets, in columns.
const MAX_WIDTH: u16 = 84;
/// The widest the key column gets.
const MAX_KEY_WIDTH: usize = 22;

/// The help modal's own state.
#[derive(Debug, Clone, Default)]
pub struct HelpModal {
    pub open: bool,
    /// The first line on screen.
    pub scroll: usize,
    /// The key lines (from the live keymap, fixed for a session).
    keys: Vec<(String, String)>,
    /// The store-again key, named in the waiting answers' line.
    pub store_again: Option<String>,
}

/// Every key line: the keymap's bindings, then the fixed keys.
fn key_lines(keymap: &Keymap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = keymap
        .help_lines()
        .into_iter()
        .map(|(k, d)| (k, d.to_string()))
        .collect();
    out.extend(FIXED.iter().map(|(k, d)| (k.to_string(), d.to_string())));
    out.push(("paste".into(), crate::tui::attach::paste_rule()));
    out
}

/// The key column's width and the text column's, for a body `body_width` wide.
fn columns(
    keys: &[(String, String)],
    status: &[(String, String)],
    body_width: u16,
) -> (usize, usize) {
    let key_width = keys
        .iter()
        .chain(status)
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_KEY_WIDTH);
    let width = MAX_WIDTH.min(body_width) as usize;
    (key_width, width.saturating_sub(key_width + 4).max(1))
}

/// Every line help shows for a body `body_width` wide: the status entries, a blank line,
/// then the keys; each text wrapped (a line that goes on has no label).
fn lines(
    keys: &[(String, String)],
    status: &[(String, String)],
    body_width: u16,
) -> Vec<(String, String)> {
    let (_, text_width) = columns(keys, status, body_width);
    let gap = (String::new(), String::new());
    let blank = (!status.is_empty()).then_some(&gap);
    let mut out = Vec::new();
    for (label, text) in status.iter().chain(blank).chain(keys) {
        for (i, piece) in wrap(&shown(text), text_width).into_iter().enumerate() {
            let label = if i == 0 { label.clone() } else { String::new() };
            out.push((label, piece));
        }
    }
    out
}

/// What a key does while help is open: scroll, close, or (ctrl+c) quit. Nothing else.
pub fn key(keymap: &Keymap, ev: &KeyEvent) -> Option<Action> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let fixed = match ev.code {
        KeyCode::Char('c') if ctrl => Some(Action::Quit),
        KeyCode::Esc | KeyCode::Char('?') | KeyCode::F(1) => Some(Action::ToggleHelp),
        KeyCode::Up | KeyCode::Char('k') => Some(Action::Up),
        KeyCode::Down | KeyCode::Char('j') => Some(Action::Down),
        KeyCode::PageUp => Some(Action::PageUp),
        KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::PageDown),
        KeyCode::Home | KeyCode::Char('g') => Some(Action::Top),
        KeyCode::End | KeyCode::Char('G') => Some(Action::Bottom),
        _ => None,
    };
    fixed.or_else(|| match keymap.action_for(ev)? {
        Action::ToggleHelp | Action::Back => Some(Action::ToggleHelp),
        a @ (Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom) => Some(a),
        _ => None,
    })
}

/// True for what an operator does (keys, a paste, a click): while help is open these go
/// to help. Background answers still land where they belong.
pub fn takes(action: &Action) -> bool {
    !matches!(
        action,
        Action::Quit
            | Action::Resize
            | Action::Planned(..)
            | Action::AttachmentRead(..)
            | Action::PreviewDue(_)
            | Action::QuestionSettled(_)
            | Action::HistoryAnswered(..)
            | Action::ReplayProgress(..)
            | Action::Replayed(..)
            | Action::SendProgress(..)
            | Action::Sent(..)
            | Action::SemanticLayer(_)
            | Action::StoredAgain(..)
    )
}

impl HelpModal {
    /// A closed modal for `keymap`'s lines.
    pub fn new(keymap: &Keymap) -> HelpModal {
        HelpModal {
            open: false,
            scroll: 0,
            keys: key_lines(keymap),
            store_again: keymap.primary_label(&Action::StoreAgain),
        }
    }

    /// How many rows help has with `status` over the `body`, and how many show.
    pub fn extent(&self, status: &[(String, String)], body: Rect) -> Extent {
        Extent {
            rows: lines(&self.keys, status, body.width).len(),
            height: body.height.saturating_sub(2) as usize,
        }
    }

    /// Open or close it, at the top.
    pub fn toggle(&mut self) {
        self.open = !self.open;
        self.scroll = 0;
    }

    /// Apply an operator's action while help is open; `page` rows a page moves, within
    /// `extent` (see [`HelpModal::extent`]).
    pub fn update(&mut self, action: Action, page: usize, extent: Extent) {
        if matches!(action, Action::ToggleHelp | Action::Back) {
            self.open = false;
            self.scroll = 0;
        } else if let Some(top) = scrolled(action.movement(), self.scroll, page, extent) {
            self.scroll = top;
        }
    }
}

/// The help modal over the panes, as tall as the body allows, scrolled: `status` (see
/// `State::status_entries`) first, then the keys.
pub fn draw(
    frame: &mut Frame,
    body: Rect,
    help: &HelpModal,
    status: &[(String, String)],
    theme: &Theme,
) {
    let all = lines(&help.keys, status, body.width);
    let (key_width, text_width) = columns(&help.keys, status, body.width);
    let width = MAX_WIDTH.min(body.width);
    let height = (all.len() as u16 + 2).min(body.height);
    let area = Rect {
        x: body.x + (body.width - width) / 2,
        y: body.y + (body.height - height) / 2,
        width,
        height,
    };
    let extent = Extent {
        rows: all.len(),
        height: height.saturating_sub(2) as usize,
    };
    let scroll = extent.clamp(help.scroll);
    let shown_lines: Vec<Line> = all
        .iter()
        .skip(scroll)
        .take(extent.height)
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{:>key_width$}  ", clip(keys, key_width)),
                    theme.accent,
                ),
                Span::raw(clip(what, text_width)),
            ])
        })
        .collect();
    let what = if status.is_empty() {
        "keys (live keymap)"
    } else {
        "status and keys (live keymap)"
    };
    let title = if extent.overflows() {
        format!(
            " {what} · {} · j/k scroll · esc closes ",
            extent.range(scroll)
        )
    } else {
        format!(" {what} · esc closes ")
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(shown_lines).block(pane_block(title, true, theme)),
        area,
    );
}
