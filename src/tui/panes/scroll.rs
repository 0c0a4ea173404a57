//! Views taller than their screen — help, a Catalog entry, a History plan open in full, the
//! Preview — scroll one way: their lines are wrapped to the view's width before they are
//! counted, and where a movement key takes them is kept within their rows where it is
//! changed, the last full page being the end (tester 17 F3: an entry was counted before it
//! wrapped, so its end was never shown; F4: a position stored past the end made the keys
//! back look dead).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// How many rows a view has (wrapped) and how many of them show at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extent {
    pub rows: usize,
    pub height: usize,
}

impl Extent {
    /// The furthest the first row on screen goes: the last full page is the end.
    pub fn last(self) -> usize {
        self.rows.saturating_sub(self.height)
    }

    /// `top` within the view: a resize or shorter content may have left it past the end.
    pub fn clamp(self, top: usize) -> usize {
        top.min(self.last())
    }

    /// Whether some rows are off screen.
    pub fn overflows(self) -> bool {
        self.rows > self.height
    }

    /// `16–30 of 90`: the rows on screen with the view scrolled to `top`.
    pub fn range(self, top: usize) -> String {
        let top = self.clamp(top);
        format!(
            "{}–{} of {}",
            top + 1,
            (top + self.height).min(self.rows),
            self.rows
        )
    }
}

/// A movement key's move (`Action::movement`): named here, so the views that scroll need
/// not import the actions, which name their states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
}

/// Where `mv` takes a view scrolled to `top` (`page` rows a page), within the view; `None`
/// for no move (an action that does not move it).
pub fn scrolled(mv: Option<Move>, top: usize, page: usize, extent: Extent) -> Option<usize> {
    let top = extent.clamp(top);
    let page = page.max(1);
    let to = match mv? {
        Move::Up => top.saturating_sub(1),
        Move::Down => top.saturating_add(1),
        Move::PageUp => top.saturating_sub(page),
        Move::PageDown => top.saturating_add(page),
        Move::Top => 0,
        Move::Bottom => extent.last(),
    };
    Some(extent.clamp(to))
}

/// The rows of `rows` on screen, `height` of them, from `top` (kept within them).
pub fn window<'a>(rows: Vec<Line<'a>>, top: usize, height: usize) -> Vec<Line<'a>> {
    let top = Extent {
        rows: rows.len(),
        height,
    }
    .clamp(top);
    rows.into_iter().skip(top).take(height).collect()
}

/// Every line of `lines` wrapped to `width` cells (see [`wrap_line`]).
pub fn wrap_lines<'a>(lines: Vec<Line<'a>>, width: usize) -> Vec<Line<'a>> {
    lines
        .into_iter()
        .flat_map(|l| wrap_line(l, width))
        .collect()
}

/// `line` as rows of at most `width` cells, its styles kept: broken at the last space that
/// fits (a longer word is cut), each row after the first indented as the line is, so wrapped
/// JSON stays at its level (an indent of more than half the width is not repeated).
pub fn wrap_line(line: Line<'_>, width: usize) -> Vec<Line<'_>> {
    let width = width.max(1);
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    let cell_width = |c: char| c.width().unwrap_or(0);
    if cells.iter().map(|(c, _)| cell_width(*c)).sum::<usize>() <= width {
        return vec![line];
    }
    let indent = cells.iter().take_while(|(c, _)| *c == ' ').count();
    let indent = if indent * 2 <= width { indent } else { 0 };
    let mut rows = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let pad = if rows.is_empty() { 0 } else { indent };
        let room = width - pad;
        let mut end = start;
        let mut used = 0;
        while let Some((c, _)) = cells.get(end) {
            if used + cell_width(*c) > room {
                break;
            }
            used += cell_width(*c);
            end += 1;
        }
        // A character wider than the row goes on a row of its own.
        let end = end.max(start + 1);
        // The break: at the last space that fits (past the first row's indent), which is
        // not drawn; else the row is cut where it is full.
        let after_indent = if rows.is_empty() {
            start + indent
        } else {
            start
        };
        let (cut, next) = if end >= cells.len() {
            (cells.len(), cells.len())
        } else {
            match (after_indent + 1..=end)
                .rev()
                .find(|&i| cells.get(i).is_some_and(|(c, _)| *c == ' '))
            {
                Some(space) => (space, space + 1),
                None => (end, end),
            }
        };
        let mut spans: Vec<Span> = Vec::new();
        if pad > 0 {
            spans.push(Span::raw(" ".repeat(pad)));
        }
        for (c, style) in &cells[start..cut] {
            match spans.last_mut() {
                Some(last) if last.style == *style => last.content.to_mut().push(*c),
                _ => spans.push(Span::styled(c.to_string(), *style)),
            }
        }
        rows.push(Line {
            spans,
            style: line.style,
            alignment: line.alignment,
        });
        start = next;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    fn text(rows: &[Line]) -> Vec<String> {
        rows.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_line_wraps_at_spaces_keeping_its_indent_and_its_styles() {
        let red = Style::default().fg(Color::Red);
        let line = Line::from(vec![
            Span::raw("    \"description\": "),
            Span::styled("\"open a page in the browser\"", red),
        ]);
        let rows = wrap_line(line, 20);
        assert_eq!(
            text(&rows),
            [
                "    \"description\":",
                "    \"open a page in",
                "    the browser\""
            ]
        );
        assert!(rows.iter().all(|r| r.width() <= 20));
        assert_eq!(rows[2].spans[1].style, red);
        // A word longer than the row is cut; every character is kept, in order.
        let rows = wrap_line(Line::raw("abcdefghij kl"), 4);
        assert_eq!(text(&rows), ["abcd", "efgh", "ij", "kl"]);
        // Wide characters count as two cells.
        let rows = wrap_line(Line::raw("日本語の説明"), 5);
        assert_eq!(text(&rows), ["日本", "語の", "説明"]);
        assert_eq!(text(&wrap_line(Line::raw("short"), 20)), ["short"]);
    }

    #[test]
    fn a_move_is_kept_within_the_rows_the_last_full_page_being_the_end() {
        let extent = Extent {
            rows: 50,
            height: 10,
        };
        assert_eq!(scrolled(Move::Bottom.into(), 0, 8, extent), Some(40));
        assert_eq!(scrolled(Move::Down.into(), 40, 8, extent), Some(40));
        assert_eq!(scrolled(Move::PageDown.into(), 38, 8, extent), Some(40));
        // Back up from the end moves at once, even from a position left past it.
        assert_eq!(scrolled(Move::Up.into(), 40, 8, extent), Some(39));
        assert_eq!(scrolled(Move::PageUp.into(), 1000, 8, extent), Some(32));
        assert_eq!(scrolled(Move::Top.into(), 7, 8, extent), Some(0));
        assert_eq!(scrolled(None, 7, 8, extent), None);
        assert_eq!(extent.range(40), "41–50 of 50");
        let fits = Extent {
            rows: 3,
            height: 10,
        };
        assert_eq!(scrolled(Move::PageDown.into(), 0, 8, fits), Some(0));
        assert!(!fits.overflows());
    }
}
