//! Themes with semantic roles. Built-in themes are the TOML files in `themes/`; a user's
//! `theme.toml` picks one by `name` and/or overrides roles. `NO_COLOR` drops colours and
//! keeps modifiers, so selection stays visible.

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::str::FromStr;

use crate::core::error::CoreError;
use crate::core::terminal_text::{key_segment, quoted};

pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub base: Style,
    pub muted: Style,
    pub accent: Style,
    pub selected: Style,
    pub warn: Style,
    pub error: Style,
    pub ok: Style,
    /// The charts' series colours (`chart1`…`chart6`). A theme that colours none of them
    /// (`NO_COLOR`) gets charts drawn with a letter per series instead (see
    /// [`Theme::charts_in_colour`]).
    pub chart: [Style; 6],
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    #[serde(default)]
    roles: BTreeMap<String, Role>,
}

/// One role: a colour alone (its foreground) or a table of `fg`, `bg` and `modifiers`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

/// What a role takes, in the words a wrong one is answered with.
const ROLE_EXPECTED: &str = "a colour name, #rrggbb, or a table with fg, bg and modifiers";

/// A role as written: a colour string or a table. Written by hand so that a value of the
/// wrong kind is answered with [`ROLE_EXPECTED`], not serde's name for the type.
#[derive(Debug)]
struct Role(RoleSpec);

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Role;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(ROLE_EXPECTED)
            }
            fn visit_str<E: serde::de::Error>(self, colour: &str) -> Result<Role, E> {
                Ok(Role(RoleSpec {
                    fg: Some(colour.to_string()),
                    ..RoleSpec::default()
                }))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Role, A::Error> {
                RoleSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Role)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl Default for Theme {
    fn default() -> Self {
        // The built-in dark theme is valid by construction (a test parses every built-in).
        Theme::builtin("dark").unwrap_or(Theme::plain())
    }
}

impl Theme {
    /// No colours at all: what `NO_COLOR` gets.
    pub fn plain() -> Theme {
        let s = Style::default();
        Theme {
            base: s,
            muted: s.add_modifier(Modifier::DIM),
            accent: s.add_modifier(Modifier::BOLD),
            selected: s.add_modifier(Modifier::REVERSED),
            warn: s.add_modifier(Modifier::BOLD),
            error: s.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            ok: s,
            chart: [s; 6],
        }
    }

    /// Whether chart series can be told apart by colour; if not, each is drawn with its
    /// own letter.
    pub fn charts_in_colour(&self) -> bool {
        self.chart
            .iter()
            .any(|s| s.fg.is_some_and(|c| c != Color::Reset) || s.bg.is_some())
    }

    pub fn builtin(name: &str) -> Option<Theme> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        let mut theme = Theme::plain();
        apply(&mut theme, text, name).ok()?;
        Some(theme)
    }

    /// A user's theme file: start from its `name` (default dark), then override roles.
    pub fn from_user_file(text: &str, origin: &str) -> Result<Theme, CoreError> {
        let file: ThemeFile =
            toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
        let name = file.name.as_deref().unwrap_or("dark");
        let mut theme = Theme::builtin(name).ok_or_else(|| CoreError::Field {
            origin: origin.into(),
            field: "name".into(),
            problem: format!(
                "{} is not a built-in theme (dark, light, high-contrast)",
                quoted(name)
            ),
        })?;
        apply(&mut theme, text, origin)?;
        Ok(theme)
    }
}

fn apply(theme: &mut Theme, text: &str, origin: &str) -> Result<(), CoreError> {
    let file: ThemeFile = toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
    let set_here: Vec<String> = file.roles.keys().cloned().collect();
    for (role, Role(spec)) in file.roles {
        let field = |problem: String| CoreError::Field {
            origin: origin.into(),
            field: format!("roles.{}", key_segment(&role)),
            problem,
        };
        let mut style = Style::default();
        if let Some(fg) = &spec.fg {
            style = style.fg(Color::from_str(fg)
                .map_err(|_| field(format!("fg {} is not a colour", quoted(fg))))?);
        }
        if let Some(bg) = &spec.bg {
            style = style.bg(Color::from_str(bg)
                .map_err(|_| field(format!("bg {} is not a colour", quoted(bg))))?);
        }
        for m in &spec.modifiers {
            style = style.add_modifier(match m.as_str() {
                "bold" => Modifier::BOLD,
                "dim" => Modifier::DIM,
                "italic" => Modifier::ITALIC,
                "underlined" => Modifier::UNDERLINED,
                "reversed" => Modifier::REVERSED,
                other => return Err(field(format!("unknown modifier {}", quoted(other)))),
            });
        }
        let slot = match role.as_str() {
            "base" => &mut theme.base,
            "muted" => &mut theme.muted,
            "accent" => &mut theme.accent,
            "selected" => &mut theme.selected,
            "warn" => &mut theme.warn,
            "error" => &mut theme.error,
            "ok" => &mut theme.ok,
            "chart1" => &mut theme.chart[0],
            "chart2" => &mut theme.chart[1],
            "chart3" => &mut theme.chart[2],
            "chart4" => &mut theme.chart[3],
            "chart5" => &mut theme.chart[4],
            "chart6" => &mut theme.chart[5],
            _ => {
                return Err(field(
                    "is not a role (base, muted, accent, selected, warn, error, ok, chart1…chart6)"
                        .into(),
                ));
            }
        };
        *slot = style;
    }
    // Text in the colour it is drawn on is not there at all (tester 10 T10-5), nor in one
    // barely different from it (tester 11 T11-13: #000000 on #010101). A role without a bg
    // of its own is drawn on base's (tester 12 T12-9: muted #010101 on base's #000000).
    let roles = [
        ("base", theme.base),
        ("muted", theme.muted),
        ("accent", theme.accent),
        ("selected", theme.selected),
        ("warn", theme.warn),
        ("error", theme.error),
        ("ok", theme.ok),
        ("chart1", theme.chart[0]),
        ("chart2", theme.chart[1]),
        ("chart3", theme.chart[2]),
        ("chart4", theme.chart[3]),
        ("chart5", theme.chart[4]),
        ("chart6", theme.chart[5]),
    ];
    for (role, style) in roles {
        let (Some(fg), Some(bg)) = (style.fg, style.bg.or(theme.base.bg)) else {
            continue;
        };
        let Some(why) = hides_text(fg, bg) else {
            continue;
        };
        let on = match (style.bg.is_some(), set_here.iter().any(|r| r == role)) {
            (true, _) => String::new(),
            (false, true) => " (drawn on base's bg)".to_string(),
            // A role of the theme this file starts from, made unreadable by this file's base.
            (false, false) => format!(
                " (drawn on the bg roles.base sets here; give roles.{role} an fg of its own)"
            ),
        };
        return Err(CoreError::Field {
            origin: origin.into(),
            field: format!("roles.{role}"),
            problem: format!(
                "sets fg {} on bg {}{on}, {why}, which hides its text",
                quoted(&colour_text(fg)),
                quoted(&colour_text(bg))
            ),
        });
    }
    Ok(())
}

/// Why text in `fg` on `bg` cannot be read, if it cannot: under the contrast floor where both
/// are known as RGB (an `#rrggbb`, or an xterm index 16–255, which is fixed), or the same
/// entry of the terminal's own palette (a name, or its index 0–15: `black` is `0`).
fn hides_text(fg: Color, bg: Color) -> Option<String> {
    match (shade(fg)?, shade(bg)?) {
        (Shade::Rgb(a), Shade::Rgb(b)) => {
            let ratio = contrast_ratio(a, b);
            (ratio < MIN_CONTRAST)
                .then(|| format!("contrast {ratio:.2}:1 (under {MIN_CONTRAST}:1)"))
        }
        (Shade::Palette(a), Shade::Palette(b)) => {
            (a == b).then(|| format!("the same colour (palette entry {a})"))
        }
        // The palette's RGB is the terminal's: it cannot be compared with an RGB colour.
        _ => None,
    }
}

/// A colour as a terminal shows it: one of its palette's 16 entries, or a known RGB.
enum Shade {
    Palette(u8),
    Rgb((u8, u8, u8)),
}

fn shade(c: Color) -> Option<Shade> {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    Some(match c {
        Color::Reset => return None,
        Color::Rgb(r, g, b) => Shade::Rgb((r, g, b)),
        Color::Indexed(n @ 0..=15) => Shade::Palette(n),
        Color::Indexed(n @ 16..=231) => {
            let i = usize::from(n - 16);
            Shade::Rgb((LEVELS[i / 36], LEVELS[(i / 6) % 6], LEVELS[i % 6]))
        }
        Color::Indexed(n) => {
            let v = 8 + 10 * (n - 232);
            Shade::Rgb((v, v, v))
        }
        Color::Black => Shade::Palette(0),
        Color::Red => Shade::Palette(1),
        Color::Green => Shade::Palette(2),
        Color::Yellow => Shade::Palette(3),
        Color::Blue => Shade::Palette(4),
        Color::Magenta => Shade::Palette(5),
        Color::Cyan => Shade::Palette(6),
        Color::Gray => Shade::Palette(7),
        Color::DarkGray => Shade::Palette(8),
        Color::LightRed => Shade::Palette(9),
        Color::LightGreen => Shade::Palette(10),
        Color::LightYellow => Shade::Palette(11),
        Color::LightBlue => Shade::Palette(12),
        Color::LightMagenta => Shade::Palette(13),
        Color::LightCyan => Shade::Palette(14),
        Color::White => Shade::Palette(15),
    })
}

/// A colour as a theme file writes it.
fn colour_text(c: Color) -> String {
    const NAMES: [&str; 16] = [
        "black",
        "red",
        "green",
        "yellow",
        "blue",
        "magenta",
        "cyan",
        "gray",
        "darkgray",
        "lightred",
        "lightgreen",
        "lightyellow",
        "lightblue",
        "lightmagenta",
        "lightcyan",
        "white",
    ];
    match (c, shade(c)) {
        (Color::Rgb(r, g, b), _) => format!("#{r:02x}{g:02x}{b:02x}"),
        (Color::Indexed(n), _) => n.to_string(),
        (_, Some(Shade::Palette(n))) => NAMES[usize::from(n) % 16].to_string(),
        _ => "reset".to_string(),
    }
}

/// The least contrast a role's `fg` and `bg`, both `#rrggbb`, may have. WCAG 2's lowest
/// floor for text is 3:1 (large text); 1.5:1 refuses only colours that read as one
/// (`#000000` on `#2b2b2b` and closer) and leaves room for a deliberately muted role
/// (`#444444` on black is 2.2:1). Named and indexed colours are the terminal's own palette,
/// whose RGB this console cannot know: those are refused only when identical.
const MIN_CONTRAST: f64 = 1.5;

/// WCAG 2 contrast ratio of two sRGB colours: (L1 + 0.05) / (L2 + 0.05), L1 the lighter's
/// relative luminance. 1 for equal colours, 21 for black on white.
fn contrast_ratio(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    fn linear(v: u8) -> f64 {
        let c = f64::from(v) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    }
    let luminance =
        |(r, g, b): (u8, u8, u8)| 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// `NO_COLOR` set to anything non-empty disables colour (no-color.org).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses() {
        for (name, text) in BUILTIN {
            let mut t = Theme::plain();
            apply(&mut t, text, name).unwrap();
            assert_ne!(t, Theme::plain(), "{name}");
            assert!(
                t.charts_in_colour(),
                "{name}: every chart series has a colour"
            );
            for (i, a) in t.chart.iter().enumerate() {
                assert!(a.fg.is_some(), "{name}: chart{}", i + 1);
                assert!(!t.chart[..i].contains(a), "{name}: chart{} repeats", i + 1);
            }
        }
    }

    /// Tester 11 T11-13: near-identical colours hide text as surely as identical ones. Two
    /// RGB colours under the contrast floor are refused with their ratio; named and indexed
    /// colours are the terminal's palette, so only identical ones are refused.
    #[test]
    fn a_role_under_the_contrast_floor_is_refused_naming_the_ratio() {
        for (fg, bg) in [
            ("#000000", "#010101"),
            ("#ffffff", "#eeeeee"),
            ("#777777", "#808080"),
            ("#102030", "#102030"),
        ] {
            let text = format!("[roles]\nbase = {{ fg = \"{fg}\", bg = \"{bg}\" }}\n");
            let err = Theme::from_user_file(&text, "/ws/theme.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("/ws/theme.toml")
                    && err.contains("roles.base")
                    && err.contains("hides its text")
                    && err.contains(fg)
                    && err.contains(bg),
                "{fg} on {bg}: {err}"
            );
        }
        let err = Theme::from_user_file(
            "[roles]\nselected = { fg = \"#000000\", bg = \"#010101\" }\n",
            "theme.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("contrast 1.01:1"), "{err}");
        // At or over the floor, and palette colours that differ, are accepted.
        for (fg, bg) in [
            ("#000000", "#333333"),
            ("#ffffff", "#0000ff"),
            ("#767676", "#ffffff"),
            ("black", "#000000"),
            ("black", "white"),
            ("white", "gray"),
        ] {
            let text = format!("[roles]\nbase = {{ fg = \"{fg}\", bg = \"{bg}\" }}\n");
            assert!(
                Theme::from_user_file(&text, "theme.toml").is_ok(),
                "{fg} on {bg}"
            );
        }
        // Tester 12 T12-9: a role without a bg is drawn on base's; a name and its palette
        // index are one colour; xterm indexes 16–255 are known RGB.
        for (text, says) in [
            (
                "[roles]\nbase = { fg = \"#ffffff\", bg = \"#000000\" }\nmuted = \"#010101\"\n",
                "roles.muted",
            ),
            (
                "[roles]\naccent = { fg = \"black\", bg = \"0\" }\n",
                "fg 'black' on bg '0'",
            ),
            (
                "[roles]\naccent = { fg = \"white\", bg = \"15\" }\n",
                "palette entry 15",
            ),
            (
                "[roles]\naccent = { fg = \"#000000\", bg = \"16\" }\n",
                "contrast 1.00:1",
            ),
            (
                "[roles]\naccent = { fg = \"232\", bg = \"16\" }\n",
                "contrast 1.0",
            ),
        ] {
            let err = Theme::from_user_file(text, "theme.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(says) && err.contains("hides its text"),
                "{text}: {err}"
            );
        }
        assert!((contrast_ratio((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 0.01);
        assert!((contrast_ratio((255, 255, 255), (0, 0, 0)) - 21.0).abs() < 0.01);
        assert!((contrast_ratio((0x77, 0x77, 0x77), (0x77, 0x77, 0x77)) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn user_file_overlays_a_builtin() {
        let t = Theme::from_user_file(
            "name = \"light\"\n[roles]\nwarn = { fg = \"magenta\" }\n",
            "theme.toml",
        )
        .unwrap();
        assert_eq!(t.warn.fg, Some(Color::Magenta));
        assert_eq!(t.selected, Theme::builtin("light").unwrap().selected);
        let err = Theme::from_user_file("[roles]\nwarn = { fg = \"plaid\" }\n", "theme.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("roles.warn") && err.contains("plaid"), "{err}");
        let err = Theme::from_user_file(
            "[roles]\nbase = { fg = \"#000000\", bg = \"black\" }\n",
            "theme.toml",
        );
        // `black` is the terminal's palette black, not #000000: only the same colour hides.
        assert!(err.is_ok());
        let err = Theme::from_user_file(
            "[roles]\nbase = { fg = \"#000000\", bg = \"#000000\" }\n",
            "theme.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("roles.base") && err.contains("hides its text"),
            "{err}"
        );
        let err = Theme::from_user_file("name = \"neon\"\n", "theme.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("neon"), "{err}");
    }
}
