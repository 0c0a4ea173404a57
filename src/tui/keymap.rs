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
    // Not ctrl+n/ctrl+p: the Prompt box's own line down and up, which it keeps while it
    // has focus (see [`Key::text_box_keeps`]; tester 50 F10).
    ("alt+j", Action::NextSent),
    ("alt+k", Action::PrevSent),
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

/// Why a key spelling is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRefusal {
    /// Not a key at all (`"ctrl+"`, `"f99"`, `"abc"`).
    NotAKey,
    /// A key the terminal never reports as such: what arrives instead (`"arrives as enter"`).
    NeverReported(String),
}

impl Key {
    /// Parse `"ctrl+c"`, `"shift+tab"`, `"G"`, `"pagedown"`, `"f1"`, `"?"`.
    pub fn parse(text: &str) -> Option<Key> {
        Key::parse_checked(text).ok()
    }

    /// [`Key::parse`], saying why a spelling is refused. A key the legacy terminal encoding
    /// (what a terminal sends unless a program asks for more, and what this console reads)
    /// never delivers as itself is refused with what arrives instead: `ctrl+m` arrives as
    /// enter, `shift+1` as `!`, `ctrl+;` as `;` or nothing (tester 11 T11-3: bound as the
    /// only quit key, it left a console no key could quit).
    pub fn parse_checked(text: &str) -> Result<Key, KeyRefusal> {
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
        let named = match rest.to_ascii_lowercase().as_str() {
            "up" => KeyCodeName::Up,
            "down" => KeyCodeName::Down,
            "left" => KeyCodeName::Left,
            "right" => KeyCodeName::Right,
            "pageup" | "pgup" => KeyCodeName::PageUp,
            "pagedown" | "pgdn" => KeyCodeName::PageDown,
            "home" => KeyCodeName::Home,
            "end" => KeyCodeName::End,
            "tab" => KeyCodeName::Tab,
            "backtab" => KeyCodeName::BackTab,
            "enter" | "return" => KeyCodeName::Enter,
            "esc" | "escape" => KeyCodeName::Esc,
            "backspace" => KeyCodeName::Backspace,
            "space" => KeyCodeName::Char(' '),
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                // F1 to F24: what terminals send (tester 10 T10-3: `f0`, `f99` were taken).
                let n: u8 = f[1..].parse().map_err(|_| KeyRefusal::NotAKey)?;
                if !(1..=MAX_FUNCTION_KEY).contains(&n) {
                    return Err(KeyRefusal::NotAKey);
                }
                KeyCodeName::F(n)
            }
            _ => {
                let mut chars = rest.chars();
                let c = chars.next().ok_or(KeyRefusal::NotAKey)?;
                if chars.next().is_some() {
                    return Err(KeyRefusal::NotAKey);
                }
                KeyCodeName::Char(c)
            }
        };
        let code = if shift {
            // Shift is part of a letter (`shift+g` is `G`) and of shift+tab, nothing else:
            // on any other key the terminal sends the shifted character, or the key alone.
            match named {
                KeyCodeName::Char(c) if c.is_ascii_alphabetic() => {
                    KeyCodeName::Char(c.to_ascii_uppercase())
                }
                KeyCodeName::Tab | KeyCodeName::BackTab => KeyCodeName::BackTab,
                KeyCodeName::Char(c) if c != ' ' => {
                    let typed = us_shifted(c)
                        .map(|s| format!(", {} on a US layout", quoted_with(&s.to_string(), '"')))
                        .unwrap_or_default();
                    return Err(KeyRefusal::NeverReported(format!(
                        "arrives as the character it types{typed}: bind that character"
                    )));
                }
                other => {
                    let plain = Key {
                        code: other,
                        ctrl,
                        alt,
                    };
                    return Err(KeyRefusal::NeverReported(format!(
                        "{} (shift counts only in a letter, G, and in shift+tab)",
                        plain
                            .arrives_as()
                            .unwrap_or_else(|| format!("arrives as {}", plain.spelling()))
                    )));
                }
            }
        } else {
            named
        };
        let key = Key { code, ctrl, alt };
        match key.arrives_as() {
            Some(instead) => Err(KeyRefusal::NeverReported(instead)),
            None => Ok(key),
        }
    }

    /// What the legacy terminal encoding delivers for this key when it is not the key
    /// itself (crossterm's reading of the bytes a terminal sends), or `None` when it is.
    fn arrives_as(&self) -> Option<String> {
        let alt = if self.alt { "alt+" } else { "" };
        if self.ctrl {
            // Ctrl with a key is one control byte, 0x00 to 0x1f, for a few keys only.
            let instead = match self.code {
                KeyCodeName::Char(c) => match c {
                    'i' => "tab".to_string(),
                    'm' => "enter".to_string(),
                    'a'..='z' | ' ' | '4'..='7' => return None,
                    'A'..='Z' => {
                        // What ctrl and the letter arrives as, itself perhaps another key
                        // (ctrl+M is ctrl+m, which is enter).
                        let letter = Key {
                            code: KeyCodeName::Char(c.to_ascii_lowercase()),
                            ctrl: true,
                            alt: self.alt,
                        };
                        let why =
                            "(terminals send ctrl with shift and a letter as ctrl and the letter)";
                        return Some(match letter.arrives_as() {
                            Some(instead) => format!("{instead} {why}"),
                            None => format!("arrives as {} {why}", letter.spelling()),
                        });
                    }
                    '@' | '2' => "ctrl+space".to_string(),
                    '[' | '3' => return Some("arrives as esc".to_string()),
                    '\\' => "ctrl+4".to_string(),
                    ']' => "ctrl+5".to_string(),
                    '^' => "ctrl+6".to_string(),
                    '_' | '/' => "ctrl+7".to_string(),
                    '8' | '?' => "backspace".to_string(),
                    other => {
                        let plain = Key {
                            code: KeyCodeName::Char(other),
                            ctrl: false,
                            alt: self.alt,
                        };
                        return Some(format!(
                            "arrives as {} without ctrl, or not at all (a terminal has no control code for it)",
                            plain.spelling()
                        ));
                    }
                },
                KeyCodeName::Enter => "enter".to_string(),
                KeyCodeName::Tab => "tab".to_string(),
                KeyCodeName::BackTab => "shift+tab".to_string(),
                KeyCodeName::Esc => return Some("arrives as esc".to_string()),
                KeyCodeName::Backspace => {
                    "backspace or {alt}ctrl+h (the terminal decides)".replace("{alt}", alt)
                }
                _ => return None,
            };
            return Some(format!("arrives as {alt}{instead}"));
        }
        if self.alt {
            // Alt is esc before the key: esc [ and esc O begin other keys' codes.
            return match self.code {
                KeyCodeName::Char(c @ ('[' | 'O')) => Some(format!(
                    "is esc {c}, the start of another key's code: the console waits for the rest"
                )),
                KeyCodeName::Esc => Some("arrives as esc".to_string()),
                KeyCodeName::BackTab => Some("arrives as esc and shift+tab".to_string()),
                _ => None,
            };
        }
        None
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

    /// The key as a keymap.toml spells it (`up`, `pagedown`), where [`Key::label`] draws
    /// arrows and abbreviations for the status line.
    fn spelling(&self) -> String {
        let word = match self.code {
            KeyCodeName::Up => "up",
            KeyCodeName::Down => "down",
            KeyCodeName::Left => "left",
            KeyCodeName::Right => "right",
            KeyCodeName::PageUp => "pageup",
            KeyCodeName::PageDown => "pagedown",
            _ => return self.label(),
        };
        let ctrl = if self.ctrl { "ctrl+" } else { "" };
        let alt = if self.alt { "alt+" } else { "" };
        format!("{ctrl}{alt}{word}")
    }

    /// A plain key (no ctrl, no alt) is the one a hint shows first.
    fn is_plain(&self) -> bool {
        !self.ctrl && !self.alt
    }

    /// A chord the Prompt box's text area (ratatui-textarea 0.9's `TextArea::input`) edits
    /// or moves with: ctrl+a/e/b/f/p/n (line start and end, left, right, up, down), ctrl+h/
    /// d/k/j/w, ctrl+u/r (undo, redo), ctrl+y/x/c/v, ctrl+m; alt+b/f/n/p/h/d/v/</>/[/]
    /// and alt+backspace; ctrl+alt+b/f/n/p; ctrl (and ctrl+alt) with an arrow. While the box
    /// has focus it keeps them from the Sent table's keys ([`Action::NextSent`],
    /// [`Action::PrevSent`], [`Action::OpenSent`]), which are of another part of the screen
    /// (tester 50 F10: ctrl+p, bound to prev_sent, no longer moved the cursor up).
    pub fn text_box_keeps(&self) -> bool {
        use KeyCodeName::{Backspace, Char, Down, Left, Right, Up};
        match (self.ctrl, self.alt, self.code) {
            (true, false, Char(c)) => "abcdefhjkmnpruvwxy".contains(c),
            (false, true, Char(c)) => "bdfhnpv<>[]".contains(c),
            (true, true, Char(c)) => "bfnp".contains(c),
            (true, _, Up | Down | Left | Right) => true,
            (false, true, Backspace) => true,
            _ => false,
        }
    }
}

/// Whether `action` on `key` acts while the Prompt box has focus, or the key is the box's
/// own: the Sent table's keys give way to the box's ([`Key::text_box_keeps`]); the prompt's
/// own keys (quit, clear, send, attach…) act on any chord they are bound to.
fn acts_while_typing(key: &Key, action: &Action) -> bool {
    let sent_table = matches!(
        action,
        Action::NextSent | Action::PrevSent | Action::OpenSent
    );
    let the_box_keeps_it = sent_table && key.text_box_keeps();
    !key.is_plain() && !the_box_keeps_it
}

/// The character shift types with `c` on a US keyboard layout, for a hint.
fn us_shifted(c: char) -> Option<char> {
    let plain = "`1234567890-=[]\\;',./";
    let shifted = "~!@#$%^&*()_+{}|:\"<>?";
    plain
        .chars()
        .position(|p| p == c)
        .and_then(|i| shifted.chars().nth(i))
}

#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: HashMap<Key, Action>,
    /// Every bound key, the user's own first (in file order), then the defaults in their
    /// order: the first key bound to an action is the one the status line names.
    order: Vec<Key>,
    /// How many of `order` (from the front) the user's file bound.
    user_keys: usize,
    /// What the user's file left without a key, one line each ([`Keymap::warnings`]).
    warnings: Vec<String>,
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
            warnings: Vec::new(),
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
        // The file's line for each key it took from a default action, to name if that
        // action is left with no key.
        let mut took: HashMap<Key, String> = HashMap::new();
        for (key_text, action_name) in file.keys {
            let key = Key::parse_checked(&key_text).map_err(|why| CoreError::Field {
                origin: origin.into(),
                field: "keys".into(),
                problem: match why {
                    KeyRefusal::NotAKey => format!(
                        "has {}, which is not a key (try \"ctrl+x\", \"G\", \"pagedown\", \"f2\"; function keys f1 to f{MAX_FUNCTION_KEY})",
                        quoted_with(&key_text, '"')
                    ),
                    KeyRefusal::NeverReported(instead) => format!(
                        "has {}, a key the terminal never reports as such: it {instead}; bind a key that arrives as itself",
                        quoted_with(&key_text, '"')
                    ),
                },
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
            let line = format!(
                "{} = {}",
                quoted_with(&key_text, '"'),
                quoted_with(&action_name, '"')
            );
            if map.bindings.get(&key) == Some(&Action::Quit) {
                unbound_quit.push(line.clone());
            }
            if map.bindings.contains_key(&key) {
                took.insert(key, line);
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
        map.warnings = left_without_a_key(&map.bindings, &took, origin);
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

    /// What the user's keymap file left without a key, one line each naming the action,
    /// the keys it had and the lines that took them: said in the console's notes (tester 22
    /// F7: `"ctrl+s" = "quit"` left send with no key, and nothing said so). Quit is never
    /// among them: a file that leaves it no key is refused.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// [`Keymap::primary`]'s label.
    pub fn primary_label(&self, action: &Action) -> Option<String> {
        self.primary(action).map(|k| k.label())
    }

    /// The first ctrl or alt key bound to `action` that acts while typing in the Prompt
    /// pane (the user's own first), where plain keys are text and the text box keeps its
    /// own chords from the Sent table's keys ([`Keymap::typing_action`]).
    pub fn chord_label(&self, action: &Action) -> Option<String> {
        self.order
            .iter()
            .find(|k| self.bindings.get(*k) == Some(action) && acts_while_typing(k, action))
            .map(|k| k.label())
    }

    /// What a ctrl or alt chord does while the Prompt box has focus: its action, unless
    /// the chord is plain or it is one the text box edits or moves with bound to a Sent
    /// table key (then the box takes it: `None`). The one rule for the keys and for the
    /// names [`Keymap::chord_label`] gives them.
    pub fn typing_action(&self, ev: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(ev)?;
        self.bindings
            .get(&key)
            .filter(|a| acts_while_typing(&key, a))
            .cloned()
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

/// The one rule a keymap file meets besides quitting ([`Keymap::with_overlay`] refuses a
/// file that leaves quit no key): every default action left with no key in `bindings` is
/// said, naming the action, what it did, the default keys it lost and the file's lines that
/// took them (`took`, by key).
fn left_without_a_key(
    bindings: &HashMap<Key, Action>,
    took: &HashMap<Key, String>,
    origin: &str,
) -> Vec<String> {
    let mut actions: Vec<&Action> = Vec::new();
    for (_, a) in DEFAULT_BINDINGS {
        if !actions.contains(&a) {
            actions.push(a);
        }
    }
    actions
        .into_iter()
        .filter(|a| !bindings.values().any(|b| b == *a))
        .map(|action| {
            let keys: Vec<Key> = DEFAULT_BINDINGS
                .iter()
                .filter(|(_, a)| a == action)
                .filter_map(|(k, _)| Key::parse(k))
                .collect();
            let labels: Vec<String> = keys.iter().map(Key::label).collect();
            let lines: Vec<&str> = keys
                .iter()
                .filter_map(|k| took.get(k).map(String::as_str))
                .collect();
            let name = serde_json::to_value(action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!(
                "{origin}: {name} ({}) has no key now: {} took {}; bind one, e.g. \"KEY\" = \"{name}\"",
                action.describe(),
                lines.join(", "),
                labels.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    /// Tester 22 F7: a rebinding that leaves an action with no key is said, naming the
    /// action, the key it lost and the line that took it; one that leaves every action a
    /// key says nothing.
    #[test]
    fn an_overlay_leaving_an_action_with_no_key_is_said() {
        let k = Keymap::with_overlay("[keys]\n\"ctrl+s\" = \"quit\"\n", "keymap.toml").unwrap();
        assert_eq!(
            k.warnings(),
            [format!(
                "keymap.toml: send ({}) has no key now: \"ctrl+s\" = \"quit\" took ctrl+s; bind \
                 one, e.g. \"KEY\" = \"send\"",
                Action::Send.describe()
            )]
        );
        let k = Keymap::with_overlay("[keys]\n\"x\" = \"cycle_tier\"\n", "k.toml").unwrap();
        assert_eq!(k.warnings().len(), 1, "{:?}", k.warnings());
        assert!(
            k.warnings()[0].starts_with(
                "k.toml: clear_filters (history: clear every filter) has no key now: \"x\" = \
                 \"cycle_tier\" took x;"
            ),
            "{:?}",
            k.warnings()
        );
        // An action with two default keys keeps one: nothing to say. Unbinding both is.
        let k = Keymap::with_overlay("[keys]\n\"h\" = \"none\"\n", "k.toml").unwrap();
        assert!(k.warnings().is_empty(), "{:?}", k.warnings());
        let k = Keymap::with_overlay("[keys]\n\"h\" = \"none\"\n\"left\" = \"none\"\n", "k.toml")
            .unwrap();
        assert_eq!(k.warnings().len(), 1);
        assert!(
            k.warnings()[0].contains("took ←, h;") || k.warnings()[0].contains("took h, ←;"),
            "{:?}",
            k.warnings()
        );
        // Moved, not lost: send on another key.
        let k = Keymap::with_overlay(
            "[keys]\n\"ctrl+s\" = \"quit\"\n\"ctrl+e\" = \"send\"\n",
            "k.toml",
        )
        .unwrap();
        assert!(k.warnings().is_empty(), "{:?}", k.warnings());
        assert!(Keymap::default().warnings().is_empty());
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

    /// Tester 11 T11-3: a spelling the legacy terminal encoding never delivers as such is
    /// refused wherever it is bound, naming the file, the key and what arrives instead;
    /// keys that do arrive as themselves (ctrl+h, ctrl+space, ctrl+j) stay bindable.
    #[test]
    fn a_key_the_terminal_never_reports_as_such_is_refused_naming_what_arrives() {
        let only_quit = |key: &str| {
            format!("[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"{key}\" = \"quit\"\n")
        };
        for (key, arrives) in [
            ("ctrl+m", "arrives as enter"),
            ("ctrl+i", "arrives as tab"),
            ("ctrl+[", "arrives as esc"),
            ("shift+1", "arrives as the character it types"),
            ("ctrl+1", "arrives as 1 without ctrl, or not at all"),
            ("ctrl+;", "arrives as ; without ctrl, or not at all"),
            ("shift+enter", "arrives as enter"),
            ("ctrl+enter", "arrives as enter"),
            ("ctrl+shift+q", "arrives as ctrl+q"),
            ("ctrl+Q", "arrives as ctrl+q"),
            ("ctrl+/", "arrives as ctrl+7"),
            ("ctrl+tab", "arrives as tab"),
            ("ctrl+shift+tab", "arrives as shift+tab"),
            ("shift+up", "arrives as up"),
            ("shift+space", "arrives as space"),
            ("alt+[", "start of another key's code"),
            ("alt+shift+o", "start of another key's code"),
            ("alt+esc", "arrives as esc"),
            // Tester 12 T12-10: the key that finally arrives, never another refused one.
            ("ctrl+M", "arrives as enter"),
            ("ctrl+shift+m", "arrives as enter"),
            ("ctrl+shift+i", "arrives as tab"),
            ("alt+ctrl+shift+i", "arrives as alt+tab"),
            (
                "ctrl+alt+backspace",
                "arrives as alt+backspace or alt+ctrl+h",
            ),
        ] {
            let err = Keymap::with_overlay(&only_quit(key), "/ws/keymap.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("/ws/keymap.toml")
                    && err.contains(&format!("\"{key}\""))
                    && err.contains("never reports")
                    && err.contains(arrives),
                "{key}: {err}"
            );
            // Not only as the way out: under any action (and unbinding it would unbind
            // nothing the terminal sends).
            for action in ["cycle_tier", "none"] {
                let text = format!("[keys]\n\"{key}\" = \"{action}\"\n");
                let err = Keymap::with_overlay(&text, "k").unwrap_err().to_string();
                assert!(err.contains(arrives), "{key} = {action}: {err}");
            }
        }
        for key in [
            "ctrl+h",
            "ctrl+space",
            "ctrl+j",
            "ctrl+4",
            "alt+enter",
            "ctrl+up",
            "shift+g",
            "alt+x",
        ] {
            let k =
                Keymap::with_overlay(&only_quit(key), "k").unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(k.primary(&Action::Quit), Key::parse(key), "{key}");
        }
        // What the terminal sends for those keys reaches the binding.
        let k = Keymap::with_overlay(&only_quit("ctrl+space"), "k").unwrap();
        assert_eq!(
            k.action_for(&ev(KeyCode::Char(' '), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        // Every default binding is a key the terminal reports.
        for (key, _) in DEFAULT_BINDINGS {
            assert!(Key::parse(key).is_some(), "{key}");
        }
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

    /// Tester 50 F10: the Sent table's default keys are none of the Prompt box's own, so
    /// they act while it has focus and it keeps its ctrl+p and ctrl+n; a Sent table key
    /// bound to one of the box's chords is the box's there, and not named.
    #[test]
    fn the_sent_table_keys_leave_the_prompt_box_its_own() {
        let k = Keymap::default();
        for action in [Action::NextSent, Action::PrevSent, Action::OpenSent] {
            let keys: Vec<Key> = DEFAULT_BINDINGS
                .iter()
                .filter(|(_, a)| *a == action)
                .filter_map(|(key, _)| Key::parse(key))
                .collect();
            assert!(!keys.is_empty(), "{action:?}");
            assert!(
                keys.iter()
                    .all(|key| !key.text_box_keeps() && !key.is_plain()),
                "{action:?}: {keys:?}"
            );
            assert!(k.chord_label(&action).is_some(), "{action:?}");
        }
        let ctrl = |c: char| ev(KeyCode::Char(c), KeyModifiers::CONTROL);
        for c in ['p', 'n'] {
            assert!(Key::from_event(&ctrl(c)).unwrap().text_box_keeps());
            assert_eq!(k.typing_action(&ctrl(c)), None);
        }
        let k = Keymap::with_overlay("[keys]\n\"ctrl+p\" = \"prev_sent\"\n", "k").unwrap();
        assert_eq!(k.action_for(&ctrl('p')), Some(Action::PrevSent));
        assert_eq!(k.typing_action(&ctrl('p')), None);
        assert_eq!(k.chord_label(&Action::PrevSent).as_deref(), Some("alt+k"));
        // The prompt's own keys act on any chord, a box's one too (ctrl+u clears).
        assert_eq!(k.typing_action(&ctrl('u')), Some(Action::ClearPrompt));
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
