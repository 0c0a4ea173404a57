//! Key bindings: defaults in code, a user's `keymap.toml` merged on top.
//!
//! ```toml
//! [keys]
//! "ctrl+q" = "quit"
//! "x" = "cycle_tier"
//! "t" = "none"        # unbind
//! ```

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

use crate::core::error::CoreError;
use crate::core::terminal_text::{quoted, quoted_with};
use crate::tui::action::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeName,
    pub ctrl: bool,
    pub alt: bool,
}

/// The subset of key codes a binding can name, ordered for the help screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeName {
    Char(char),
    F(u8),
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Tab,
    BackTab,
    Enter,
    Esc,
    Backspace,
}

pub const DEFAULT_BINDINGS: &[(&str, Action)] = &[
    ("q", Action::Quit),
    ("ctrl+c", Action::Quit),
    ("?", Action::ToggleHelp),
    ("f1", Action::ToggleHelp),
    ("esc", Action::Back),
    ("tab", Action::FocusNext),
    ("shift+tab", Action::FocusPrev),
    ("1", Action::FocusBudgets),
    ("2", Action::FocusCatalog),
    ("3", Action::FocusPrompt),
    ("p", Action::FocusPrompt),
    ("4", Action::FocusHistory),
    ("H", Action::FocusHistory),
    ("left", Action::Left),
    ("h", Action::Left),
    ("right", Action::Right),
    ("l", Action::Right),
    ("enter", Action::Open),
    ("o", Action::CycleOutcome),
    ("d", Action::CycleDrift),
    ("c", Action::CycleCaller),
    ("m", Action::CycleModel),
    ("O", Action::CycleSource),
    ("b", Action::ToggleGaps),
    ("x", Action::ClearFilters),
    ("r", Action::Replay),
    ("up", Action::Up),
    ("k", Action::Up),
    ("down", Action::Down),
    ("j", Action::Down),
    ("pageup", Action::PageUp),
    ("pagedown", Action::PageDown),
    ("home", Action::Top),
    ("g", Action::Top),
    ("end", Action::Bottom),
    ("G", Action::Bottom),
    ("s", Action::SortNext),
    ("S", Action::SortReverse),
    ("/", Action::Filter),
    ("t", Action::CycleTier),
    ("f", Action::ToggleFullView),
    ("ctrl+u", Action::ClearPrompt),
    ("ctrl+s", Action::Send),
    ("ctrl+t", Action::ToggleAb),
    ("ctrl+n", Action::NextSent),
    ("ctrl+o", Action::OpenSent),
    ("M", Action::MarkModel),
    ("a", Action::Attach),
    ("alt+a", Action::Attach),
    ("alt+x", Action::RemoveAttachment),
    ("alt+c", Action::NextAttachment),
    ("alt+s", Action::StoreAgain),
];

/// The highest function key a terminal reports (F13–F24 only on some keyboards).
const MAX_FUNCTION_KEY: u8 = 24;

impl Key {
    /// Parse `"ctrl+c"`, `"shift+tab"`, `"G"`, `"pagedown"`, `"f1"`, `"?"`.
    pub fn parse(text: &str) -> Option<Key> {
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let mut rest = text;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower.strip_prefix("ctrl+").map(|_| &rest[5..]) {
                ctrl = true;
                rest = r;
            } else if let Some(r) = lower.strip_prefix("alt+").map(|_| &rest[4..]) {
                alt = true;
                rest = r;
            } else if let Some(r) = lower.strip_prefix("shift+").map(|_| &rest[6..]) {
                shift = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "up" => KeyCodeName::Up,
            "down" => KeyCodeName::Down,
            "left" => KeyCodeName::Left,
            "right" => KeyCodeName::Right,
            "pageup" | "pgup" => KeyCodeName::PageUp,
            "pagedown" | "pgdn" => KeyCodeName::PageDown,
            "home" => KeyCodeName::Home,
            "end" => KeyCodeName::End,
            "tab" if shift => KeyCodeName::BackTab,
            "tab" => KeyCodeName::Tab,
            "backtab" => KeyCodeName::BackTab,
            "enter" | "return" => KeyCodeName::Enter,
            "esc" | "escape" => KeyCodeName::Esc,
            "backspace" => KeyCodeName::Backspace,
            "space" => KeyCodeName::Char(' '),
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                // F1 to F24: what terminals send (tester 10 T10-3: `f0`, `f99` were taken).
                let n: u8 = f[1..].parse().ok()?;
                if !(1..=MAX_FUNCTION_KEY).contains(&n) {
                    return None;
                }
                KeyCodeName::F(n)
            }
            _ => {
                let mut chars = rest.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyCodeName::Char(if shift { c.to_ascii_uppercase() } else { c })
            }
        };
        Some(Key { code, ctrl, alt })
    }

    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        let code = match ev.code {
            KeyCode::Char(c) => KeyCodeName::Char(c),
            KeyCode::F(n) => KeyCodeName::F(n),
            KeyCode::Up => KeyCodeName::Up,
            KeyCode::Down => KeyCodeName::Down,
            KeyCode::Left => KeyCodeName::Left,
            KeyCode::Right => KeyCodeName::Right,
            KeyCode::PageUp => KeyCodeName::PageUp,
            KeyCode::PageDown => KeyCodeName::PageDown,
            KeyCode::Home => KeyCodeName::Home,
            KeyCode::End => KeyCodeName::End,
            KeyCode::Tab => KeyCodeName::Tab,
            KeyCode::BackTab => KeyCodeName::BackTab,
            KeyCode::Enter => KeyCodeName::Enter,
            KeyCode::Esc => KeyCodeName::Esc,
            KeyCode::Backspace => KeyCodeName::Backspace,
            _ => return None,
        };
        Some(Key {
            code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        })
    }

    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.ctrl {
            s.push_str("ctrl+");
        }
        if self.alt {
            s.push_str("alt+");
        }
        match self.code {
            KeyCodeName::Char(' ') => s.push_str("space"),
            KeyCodeName::Char(c) => s.push(c),
            KeyCodeName::F(n) => s.push_str(&format!("f{n}")),
            KeyCodeName::BackTab => s.push_str("shift+tab"),
            KeyCodeName::Up => s.push('↑'),
            KeyCodeName::Down => s.push('↓'),
            KeyCodeName::Left => s.push('←'),
            KeyCodeName::Right => s.push('→'),
            KeyCodeName::PageUp => s.push_str("pgup"),
            KeyCodeName::PageDown => s.push_str("pgdn"),
            KeyCodeName::Home => s.push_str("home"),
            KeyCodeName::End => s.push_str("end"),
            KeyCodeName::Tab => s.push_str("tab"),
            KeyCodeName::Enter => s.push_str("enter"),
            KeyCodeName::Esc => s.push_str("esc"),
            KeyCodeName::Backspace => s.push_str("backspace"),
        }
        s
    }

    /// A plain key (no ctrl, no alt) is the one a hint shows first.
    fn is_plain(&self) -> bool {
        !self.ctrl && !self.alt
    }
}

#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: HashMap<Key, Action>,
    /// Every bound key, the user's own first (in file order), then the defaults in their
    /// order: the first key bound to an action is the one the status line names.
    order: Vec<Key>,
    /// How many of `order` (from the front) the user's file bound.
    user_keys: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeymapFile {
    #[serde(default)]
    keys: BTreeMap<String, String>,
}

impl Default for Keymap {
    fn default() -> Self {
        let pairs: Vec<(Key, Action)> = DEFAULT_BINDINGS
            .iter()
            .filter_map(|(k, a)| Key::parse(k).map(|key| (key, a.clone())))
            .collect();
        let order = pairs.iter().map(|(k, _)| *k).collect();
        Keymap {
            bindings: pairs.into_iter().collect(),
            order,
            user_keys: 0,
        }
    }
}

impl Keymap {
    /// The defaults with a user's keymap TOML merged on top. `"none"` unbinds a key.
    pub fn with_overlay(text: &str, origin: &str) -> Result<Keymap, CoreError> {
        let file: KeymapFile =
            toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
        let mut map = Keymap::default();
        let mut user_keys: Vec<Key> = Vec::new();
        // The keys this file took away from quitting, to name if nothing quits any more.
        let mut unbound_quit: Vec<String> = Vec::new();
        // Each key's spelling in the file: `"G"` and `"shift+g"` are one key.
        let mut spelled: HashMap<Key, String> = HashMap::new();
        for (key_text, action_name) in file.keys {
            let key = Key::parse(&key_text).ok_or_else(|| CoreError::Field {
                origin: origin.into(),
                field: "keys".into(),
                problem: format!(
                    "has {}, which is not a key (try \"ctrl+x\", \"G\", \"pagedown\", \"f2\"; function keys f1 to f{MAX_FUNCTION_KEY})",
                    quoted_with(&key_text, '"')
                ),
            })?;
            if let Some(first) = spelled.insert(key, key_text.clone()) {
                return Err(CoreError::Field {
                    origin: origin.into(),
                    field: "keys".into(),
                    problem: format!(
                        "binds one key twice, as {} and {} (tester 10 T10-4: one of them was dropped without a word); keep one",
                        quoted_with(&first, '"'),
                        quoted_with(&key_text, '"')
                    ),
                });
            }
            if map.bindings.get(&key) == Some(&Action::Quit) {
                unbound_quit.push(format!("\"{key_text}\" = \"{action_name}\""));
            }
            if action_name == "none" {
                map.bindings.remove(&key);
                continue;
            }
            let action: Action = serde_json::from_value(serde_json::Value::String(
                action_name.clone(),
            ))
            .map_err(|_| CoreError::Field {
                origin: origin.into(),
                field: format!("keys.{}", quoted_with(&key_text, '"')),
                problem: format!("names unknown action {}", quoted(&action_name)),
            })?;
            map.bindings.insert(key, action);
            user_keys.push(key);
        }
        // Quitting must not hang on a key some keyboards lack: a function key alone does
        // not count (tester 10 T10-3: `"f99" = "quit"` left a console no one could quit).
        let quits =
            |k: &Key, a: &Action| *a == Action::Quit && !matches!(k.code, KeyCodeName::F(_));
        if !map.bindings.iter().any(|(k, a)| quits(k, a)) {
            let only_function_keys: Vec<String> = map
                .bindings
                .iter()
                .filter(|(_, a)| **a == Action::Quit)
                .map(|(k, _)| k.label())
                .collect();
            let why = if only_function_keys.is_empty() {
                format!("{} took the last one away", unbound_quit.join(", "))
            } else {
                format!(
                    "only the function key {} quits, which not every keyboard has",
                    only_function_keys.join(", ")
                )
            };
            return Err(CoreError::Field {
                origin: origin.into(),
                field: "keys".into(),
                problem: format!(
                    "leaves no key bound to quit that every keyboard sends ({why}); bind one, e.g. \"q\" = \"quit\""
                ),
            });
        }
        map.user_keys = user_keys
            .iter()
            .filter(|k| map.bindings.contains_key(k))
            .count();
        let defaults: Vec<Key> = map
            .order
            .iter()
            .filter(|k| !user_keys.contains(k))
            .copied()
            .collect();
        user_keys.extend(defaults);
        let bindings = &map.bindings;
        user_keys.retain(|k| bindings.contains_key(k));
        map.order = user_keys;
        Ok(map)
    }

    /// The key the status line names for `action`: a plain key the user bound, else a
    /// plain letter or sign (`j` over `↓`, `p` over `3`), else any plain key, else any key.
    pub fn primary(&self, action: &Action) -> Option<Key> {
        let rank = |(i, k): (usize, &Key)| {
            let letter = matches!(k.code, KeyCodeName::Char(c) if !c.is_ascii_digit());
            let class = match (k.is_plain(), i < self.user_keys, letter) {
                (true, true, _) => 0,
                (true, false, true) => 1,
                (true, false, false) => 2,
                (false, ..) => 3,
            };
            (class, i)
        };
        self.order
            .iter()
            .enumerate()
            .filter(|(_, k)| self.bindings.get(*k) == Some(action))
            .min_by_key(|&(i, k)| rank((i, k)))
            .map(|(_, k)| *k)
    }

    /// [`Keymap::primary`]'s label.
    pub fn primary_label(&self, action: &Action) -> Option<String> {
        self.primary(action).map(|k| k.label())
    }

    /// The first ctrl or alt key bound to `action` (the user's own first): the one that
    /// works while typing in the Prompt pane, where plain keys are text.
    pub fn chord_label(&self, action: &Action) -> Option<String> {
        self.order
            .iter()
            .find(|k| !k.is_plain() && self.bindings.get(*k) == Some(action))
            .map(|k| k.label())
    }

    pub fn action_for(&self, ev: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(ev)?;
        // SHIFT is not part of a key: the character itself ('G' vs 'g') carries it.
        self.bindings.get(&key).cloned()
    }

    /// Bindings grouped by action, for the help screen, in the defaults' order.
    pub fn help_lines(&self) -> Vec<(String, &'static str)> {
        let mut order: Vec<Action> = Vec::new();
        for (_, a) in DEFAULT_BINDINGS {
            if !order.contains(a) {
                order.push(a.clone());
            }
        }
        for a in self.bindings.values() {
            if !order.contains(a) {
                order.push(a.clone());
            }
        }
        order
            .into_iter()
            .filter_map(|a| {
                let mut keys: Vec<Key> = self
                    .bindings
                    .iter()
                    .filter(|(_, b)| **b == a)
                    .map(|(k, _)| *k)
                    .collect();
                if keys.is_empty() {
                    return None;
                }
                keys.sort();
                let labels: Vec<String> = keys.iter().map(Key::label).collect();
                Some((labels.join(", "), a.describe()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn defaults_bind_the_basics() {
        let k = Keymap::default();
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
        assert_eq!(
            k.action_for(&ev(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Action::FocusPrev)
        );
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('z'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn overlay_rebinds_unbinds_and_reports_errors() {
        let k = Keymap::with_overlay(
            "[keys]\n\"x\" = \"cycle_tier\"\n\"t\" = \"none\"\n",
            "keymap.toml",
        )
        .unwrap();
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Action::CycleTier)
        );
        assert_eq!(
            k.action_for(&ev(KeyCode::Char('t'), KeyModifiers::NONE)),
            None
        );
        let err = Keymap::with_overlay("[keys]\n\"x\" = \"launch_rockets\"\n", "keymap.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("launch_rockets") && err.contains("keymap.toml"),
            "{err}"
        );
        let err = Keymap::with_overlay("[keys]\n\"ctrl+\" = \"quit\"\n", "keymap.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a key"), "{err}");
    }

    #[test]
    fn a_keymap_that_leaves_no_way_to_quit_is_refused_naming_the_file_and_the_keys() {
        let err = Keymap::with_overlay(
            "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"cycle_tier\"\n",
            "/ws/keymap.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("/ws/keymap.toml")
                && err.contains("no key bound to quit")
                && err.contains("\"q\" = \"none\"")
                && err.contains("\"ctrl+c\" = \"cycle_tier\""),
            "{err}"
        );
        // Tester 10 T10-3: a function key alone cannot be the way out, and f0 or f99 are
        // no keys at all.
        let err = Keymap::with_overlay(
            "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"f9\" = \"quit\"\n",
            "keymap.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only the function key f9 quits"), "{err}");
        for key in ["f0", "f25", "f99", "f255"] {
            let text = format!("[keys]\n\"{key}\" = \"quit\"\n");
            let err = Keymap::with_overlay(&text, "keymap.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains("not a key"), "{key}: {err}");
        }
        assert!(Keymap::with_overlay("[keys]\n\"f24\" = \"quit\"\n", "k").is_ok());
        // Tester 10 T10-4: one key under two spellings is refused, naming both.
        let err = Keymap::with_overlay(
            "[keys]\n\"G\" = \"cycle_tier\"\n\"shift+g\" = \"quit\"\n",
            "keymap.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("binds one key twice")
                && err.contains("\"G\"")
                && err.contains("\"shift+g\""),
            "{err}"
        );
        // Moving quit to another key is fine.
        let k = Keymap::with_overlay(
            "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"x\" = \"quit\"\n",
            "k",
        )
        .unwrap();
        assert_eq!(k.primary_label(&Action::Quit).as_deref(), Some("x"));
    }

    #[test]
    fn the_primary_key_prefers_the_users_own_then_plain_defaults() {
        let k = Keymap::default();
        assert_eq!(k.primary_label(&Action::Quit).as_deref(), Some("q"));
        assert_eq!(
            k.primary_label(&Action::FocusPrev).as_deref(),
            Some("shift+tab")
        );
        let k = Keymap::with_overlay("[keys]\n\"z\" = \"cycle_tier\"\n", "k").unwrap();
        assert_eq!(k.primary_label(&Action::CycleTier).as_deref(), Some("z"));
        assert_eq!(Key::parse("pagedown").unwrap().label(), "pgdn");
    }

    #[test]
    fn help_lists_every_bound_action_once() {
        let lines = Keymap::default().help_lines();
        assert!(
            lines
                .iter()
                .any(|(k, d)| k.contains("ctrl+c") && k.contains('q') && *d == "quit")
        );
        let descs: Vec<_> = lines.iter().map(|(_, d)| *d).collect();
        let mut unique = descs.clone();
        unique.dedup();
        assert_eq!(descs.len(), unique.len());
    }
}
