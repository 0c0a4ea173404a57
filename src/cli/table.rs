//! Plain-text tables for people: columns padded to their widest cell.

/// Render rows under a header, left-aligned, two spaces between columns.
/// Columns whose header starts with '>' are right-aligned (the '>' is not printed).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    // A cell is one line: a line break or tab in outside text (an imported caller, a tool
    // name, a gateway's user) is shown escaped, never as a row of its own. Widths are of
    // what is shown.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| crate::core::terminal_text::for_terminal_line(c).into_owned())
                .collect()
        })
        .collect();
    let rows = &rows;
    let cols = header.len();
    let right: Vec<bool> = header.iter().map(|h| h.starts_with('>')).collect();
    let header: Vec<&str> = header.iter().map(|h| h.trim_start_matches('>')).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| -> String {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate().take(cols) {
            let pad = widths[i].saturating_sub(cell.chars().count());
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

    #[test]
    fn a_line_break_in_a_cell_stays_in_its_cell() {
        let t = render(
            &["caller", "model"],
            &[vec!["ops\nFAKE caller".into(), "m/x".into()]],
        );
        assert_eq!(t, "caller            model\nops\\nFAKE caller  m/x\n");
    }
}
