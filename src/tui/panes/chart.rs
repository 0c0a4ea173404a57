//! Charts as lines of text: stacked bars, their legends, sparklines. Each series has a theme
//! colour (`chart1`…`chart6`) and a letter; a theme without chart colours (`NO_COLOR`) draws
//! a series' cells with its letter, so the bar still reads in a plain terminal and in a
//! screen capture. The numbers come from `core::chart`.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::core::chart::{WindowBar, WindowPart, apportion};
use crate::core::history::Drift;
use crate::format::{percent, thousands};
use crate::tui::theme::Theme;

/// One series of a chart.
#[derive(Debug, Clone, Copy)]
pub struct Series {
    pub style: Style,
    pub letter: char,
    /// Filled cells (`█` in colour); otherwise the letter always (`·` for what is free).
    pub solid: bool,
}

impl Series {
    fn glyph(&self, theme: &Theme) -> char {
        if self.solid && theme.charts_in_colour() {
            '█'
        } else {
            self.letter
        }
    }

    /// `n` cells of this series.
    pub fn cells(&self, n: usize, theme: &Theme) -> Span<'static> {
        Span::styled(self.glyph(theme).to_string().repeat(n), self.style)
    }

    /// The legend's swatch.
    pub fn swatch(&self, theme: &Theme) -> Span<'static> {
        self.cells(1, theme)
    }
}

pub fn window_series(part: WindowPart, theme: &Theme) -> Series {
    let (style, solid) = match part {
        WindowPart::System => (theme.chart[0], true),
        WindowPart::Catalog => (theme.chart[1], true),
        WindowPart::Instruction => (theme.chart[2], true),
        WindowPart::Attachments => (theme.chart[3], true),
        WindowPart::Output => (theme.chart[4], true),
        WindowPart::Free => (theme.muted, false),
    };
    Series {
        style,
        letter: if part == WindowPart::Free {
            '·'
        } else {
            part.letter()
        },
        solid,
    }
}

pub fn drift_series(drift: Drift, theme: &Theme) -> Series {
    let (i, letter) = match drift {
        Drift::Followed => (4, 'f'),
        Drift::Partial => (3, 'p'),
        Drift::Ignored => (0, 'i'),
        Drift::Diverged => (2, 'd'),
        Drift::Failed | Drift::Replay => (5, 'x'),
    };
    Series {
        style: theme.chart[i],
        letter,
        solid: true,
    }
}

/// A stacked bar: `(series, value)` in order, in exactly `width` cells (none when every
/// value is 0).
pub fn stacked_bar(parts: &[(Series, usize)], width: usize, theme: &Theme) -> Vec<Span<'static>> {
    let values: Vec<usize> = parts.iter().map(|(_, v)| *v).collect();
    parts
        .iter()
        .zip(apportion(&values, width))
        .filter(|(_, n)| *n > 0)
        .map(|((s, _), n)| s.cells(n, theme))
        .collect()
}

/// Legend items (a swatch, then its text) laid out in as many lines of `width` as they
/// need, two spaces apart.
pub fn legend(
    items: Vec<(Span<'static>, String)>,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = Vec::new();
    let mut current: Vec<Span> = Vec::new();
    let mut used = 0;
    for (swatch, text) in items {
        let len = swatch.content.chars().count() + 1 + text.chars().count();
        if used > 0 && used + 2 + len > width {
            lines.push(Line::from(std::mem::take(&mut current)));
            used = 0;
        }
        if used > 0 {
            current.push(Span::raw("  "));
            used += 2;
        }
        current.push(swatch);
        current.push(Span::styled(format!(" {text}"), theme.base));
        used += len;
    }
    if !current.is_empty() {
        lines.push(Line::from(current));
    }
    lines
}

/// The window bar (in `width` cells) and its legend: each part named with its tokens and
/// share.
pub fn window_lines(bar: &WindowBar, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let parts: Vec<(Series, usize)> = bar
        .segments
        .iter()
        .map(|(p, t)| (window_series(*p, theme), *t))
        .collect();
    let mut lines = vec![Line::from(stacked_bar(&parts, width, theme))];
    let items = bar
        .segments
        .iter()
        .map(|(p, t)| {
            (
                window_series(*p, theme).swatch(theme),
                match t {
                    0 => format!("{} 0", p.label()),
                    t => format!(
                        "{} {} {}",
                        p.label(),
                        thousands(*t),
                        percent(bar.percent(*p))
                    ),
                },
            )
        })
        .collect();
    lines.extend(legend(items, width, theme));
    lines
}

/// A share in [0, 1] as one of eight block heights; a week without data as `·`.
pub fn sparkline(values: &[Option<f64>]) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    values
        .iter()
        .map(|v| match v {
            Some(v) => LEVELS[(v.clamp(0.0, 1.0) * 7.0).round() as usize],
            None => '·',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_levels_and_gaps() {
        assert_eq!(
            sparkline(&[Some(0.0), Some(0.5), Some(1.0), None, Some(2.0)]),
            "▁▅█·█"
        );
    }

    #[test]
    fn plain_themes_draw_letters_and_coloured_ones_blocks() {
        let plain = Theme::plain();
        let s = window_series(WindowPart::Catalog, &plain);
        assert_eq!(s.cells(3, &plain).content, "ccc");
        let dark = Theme::default();
        assert_eq!(s.cells(3, &dark).content, "███");
        let free = window_series(WindowPart::Free, &dark);
        assert_eq!(free.cells(2, &dark).content, "··");
    }

    #[test]
    fn a_legend_flows_into_lines_no_wider_than_asked() {
        let t = Theme::plain();
        let items: Vec<(Span<'static>, String)> = (0..6)
            .map(|i| (Span::raw("x"), format!("item {i} 1,234 5.0%")))
            .collect();
        let lines = legend(items, 40, &t);
        assert!(lines.len() >= 3);
        for l in &lines {
            assert!(l.width() <= 40, "{l:?}");
        }
    }
}
