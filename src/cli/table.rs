//! Plain-text tables for people: columns padded to their widest cell, by the cells a
//! terminal shows (a CJK character is two, a combining mark none).

use crate::core::text::{display_width, elide};

/// The most cells a column's cell takes; a longer one is cut in the middle.
const CELL_MAX: usize = 60;

/// One cell outside a table, shown as a table shows it (one line, cut past [`CELL_MAX`]),
/// then padded to `width` cells a terminal shows: a CJK name lines up with an ASCII one.
pub fn padded(cell: &str, width: usize) -> String {
    let shown = elide(
        &crate::core::terminal_text::for_terminal_line(cell),
        CELL_MAX,
    );
    crate::core::text::pad_to(&shown, width)
}

/// Render rows under a header, left-aligned, two spaces between columns.
/// Columns whose header starts with '>' are right-aligned (the '>' is not printed).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    // A cell is one line: a line break or tab in outside text (an imported caller, a tool
    // name, a gateway's user) is shown escaped, never as a row of its own. Widths are of
    // what is shown.
    // A cell wider than CELL_MAX is cut in the middle (the tail tells model ids apart), so
    // one 300-character id does not make every line of the table 300 wide (tester 6 F17).
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| elide(&crate::core::terminal_text::for_terminal_line(c), CELL_MAX))
                .collect()
        })
        .collect();
    let rows = &rows;
    let cols = header.len();
    let right: Vec<bool> = header.iter().map(|h| h.starts_with('>')).collect();
    let header: Vec<&str> = header.iter().map(|h| h.trim_start_matches('>')).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| display_width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(display_width(cell));
        }
    }
    let line = |cells: &[&str]| -> String {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate().take(cols) {
            let pad = widths[i].saturating_sub(display_width(cell));
            if i > 0 {
                out.push_str("  ");
            }
            if right[i] {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                if i + 1 < cols {
                    out.push_str(&" ".repeat(pad));
                }
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(&header);
    out.push('\n');
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_outside_a_table_pads_by_the_cells_shown() {
        // Tester 12 T12-5: `compact`'s cut list padded by characters.
        assert_eq!(display_width(&padded("t58.日本語", 12)), 12);
        assert_eq!(padded("t58.日本語", 12), "t58.日本語  ");
        assert_eq!(padded("a\nb", 5), "a\\nb ");
    }

    #[test]
    fn pads_and_aligns() {
        let t = render(
            &["id", ">n"],
            &[
                vec!["a".into(), "1".into()],
                vec!["long".into(), "100".into()],
            ],
        );
        assert_eq!(t, "id      n\na       1\nlong  100\n");
    }

    /// Columns line up by what a terminal shows, and a huge cell is cut in the middle
    /// between grapheme clusters (tester 6 F17).
    #[test]
    fn columns_line_up_by_display_width_and_a_huge_cell_is_cut() {
        let accents = format!("local/{}", "e\u{301}".repeat(100));
        let t = render(
            &["id", ">n"],
            &[
                vec!["日本語".into(), "1".into()],
                vec!["abcdef".into(), "22".into()],
                vec![accents.clone(), "3".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        let ends: Vec<usize> = lines.iter().map(|l| display_width(l)).collect();
        assert!(ends.iter().all(|&w| w == ends[0]), "{t}\n{ends:?}");
        assert!(ends[0] <= CELL_MAX + 2 + 2, "{t}");
        // No combining accent is left on the cut's mark or at the start of the tail.
        let cut = lines[3];
        assert!(cut.contains('…') && !cut.contains("…\u{301}"), "{cut:?}");
        assert!(cut.starts_with("local/"), "{cut:?}");
    }

    #[test]
    fn a_line_break_in_a_cell_stays_in_its_cell() {
        let t = render(
            &["caller", "model"],
            &[vec!["ops\nFAKE caller".into(), "m/x".into()]],
        );
        assert_eq!(t, "caller            model\nops\\nFAKE caller  m/x\n");
    }
}
