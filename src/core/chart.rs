//! Pictures as numbers: how a request fills the model's window (the Prompt pane's bar and
//! `preview`'s window line read [`window_bar`]), and how many cells of a bar each value gets
//! ([`apportion`], for every stacked bar the console draws). Front ends pick glyphs and
//! colours; what the bar says is decided here, once.

use serde::Serialize;

use crate::core::assemble::PartTotals;
use crate::core::request::PlannedRequest;

/// One part of the model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowPart {
    /// The system prompt and the chat format's framing (per-message and reply-priming
    /// tokens, the separators between parts).
    System,
    /// The compacted catalog, with its label.
    Catalog,
    /// The instruction, with the defaults block, the planner's hint and the past-plans
    /// prior (the steps past plans took for similar intents).
    Instruction,
    /// Attachments and the briefing of a pasted instruction, as sent.
    Attachments,
    /// What the row reserves for the reply (`output_tokens`).
    Output,
    /// The input ceiling not used by this request.
    Free,
}

impl WindowPart {
    /// In the bar's order: the input as sent, the reply after it, then what is left.
    pub const ALL: [WindowPart; 6] = [
        WindowPart::System,
        WindowPart::Catalog,
        WindowPart::Instruction,
        WindowPart::Attachments,
        WindowPart::Output,
        WindowPart::Free,
    ];

    pub fn label(self) -> &'static str {
        match self {
            WindowPart::System => "system+framing",
            WindowPart::Catalog => "catalog",
            WindowPart::Instruction => "instruction",
            WindowPart::Attachments => "attachments",
            WindowPart::Output => "output reserve",
            WindowPart::Free => "free",
        }
    }

    /// The character that fills this part's cells where colour is not available (a log, a
    /// plain terminal, `NO_COLOR`).
    pub fn letter(self) -> char {
        match self {
            WindowPart::System => 's',
            WindowPart::Catalog => 'c',
            WindowPart::Instruction => 'i',
            WindowPart::Attachments => 'a',
            WindowPart::Output => 'o',
            WindowPart::Free => '.',
        }
    }
}

/// How one request fills its model's window: the row's input ceiling plus the output it
/// reserves, split into [`WindowPart`]s that add up to it (or, for a request over its
/// ceiling, to the request plus the reserve: see [`WindowBar::over_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowBar {
    /// The row's input ceiling (`input_tokens`).
    pub input_tokens: usize,
    /// What the row reserves for the reply (`output_tokens`).
    pub output_tokens: usize,
    /// Tokens per part, in [`WindowPart::ALL`]'s order.
    pub segments: Vec<(WindowPart, usize)>,
}

impl WindowBar {
    /// The window: input ceiling plus output reserve.
    pub fn window(&self) -> usize {
        self.input_tokens + self.output_tokens
    }

    /// The sum of the segments: the window, unless the request is over its ceiling.
    pub fn total(&self) -> usize {
        self.segments.iter().map(|(_, t)| t).sum()
    }

    pub fn tokens(&self, part: WindowPart) -> usize {
        self.segments
            .iter()
            .find(|(p, _)| *p == part)
            .map_or(0, |(_, t)| *t)
    }

    /// The request's input, every part counted as sent.
    pub fn used(&self) -> usize {
        self.total() - self.tokens(WindowPart::Output) - self.tokens(WindowPart::Free)
    }

    /// Tokens the request's input goes over the row's input ceiling (0 when it fits).
    pub fn over_by(&self) -> usize {
        self.used().saturating_sub(self.input_tokens)
    }

    /// A part's share of the bar, in percent.
    pub fn percent(&self, part: WindowPart) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        self.tokens(part) as f64 * 100.0 / total as f64
    }

    /// The bar in `width` cells: each part's cell count, in order (see [`apportion`]).
    pub fn cells(&self, width: usize) -> Vec<(WindowPart, usize)> {
        let values: Vec<usize> = self.segments.iter().map(|(_, t)| *t).collect();
        self.segments
            .iter()
            .zip(apportion(&values, width))
            .map(|((p, _), n)| (*p, n))
            .collect()
    }

    /// From counts: the row's ceiling and reserve, and the request's input by part
    /// ([`PartTotals`], the figures every surface shows). The system segment is the system
    /// prompt with the framing no part carries.
    pub fn from_totals(input_tokens: usize, output_tokens: usize, t: &PartTotals) -> WindowBar {
        // The prior is the planner's guidance from past plans, sent in the user message
        // beside the hint: it is in the instruction (`PartTotals::prompt`), not the system.
        let system = t.system + t.framing;
        let used = system + t.catalog + t.prompt + t.attachments;
        WindowBar {
            input_tokens,
            output_tokens,
            segments: vec![
                (WindowPart::System, system),
                (WindowPart::Catalog, t.catalog),
                (WindowPart::Instruction, t.prompt),
                (WindowPart::Attachments, t.attachments),
                (WindowPart::Output, output_tokens),
                (WindowPart::Free, input_tokens.saturating_sub(used)),
            ],
        }
    }
}

/// How `request` fills the window of the row it was planned for.
pub fn window_bar(request: &PlannedRequest) -> WindowBar {
    let row = &request.effective.row;
    WindowBar::from_totals(row.input_tokens, row.output_tokens, &request.request.totals)
}

/// `width` cells shared among `values` in proportion (largest remainder), adding up to
/// `width` exactly (none when every value is 0). A value above 0 gets at least one cell
/// while there are cells to give, taken from the largest share, so a small part is seen.
pub fn apportion(values: &[usize], width: usize) -> Vec<usize> {
    let total: u128 = values.iter().map(|&v| v as u128).sum();
    if total == 0 || width == 0 {
        return vec![0; values.len()];
    }
    let scaled: Vec<u128> = values.iter().map(|&v| v as u128 * width as u128).collect();
    let mut cells: Vec<usize> = scaled.iter().map(|s| (s / total) as usize).collect();
    let mut left = width - cells.iter().sum::<usize>();
    let mut by_remainder: Vec<usize> = (0..values.len()).collect();
    by_remainder.sort_by(|&a, &b| {
        (scaled[b] % total)
            .cmp(&(scaled[a] % total))
            .then(a.cmp(&b))
    });
    for &i in &by_remainder {
        if left == 0 {
            break;
        }
        cells[i] += 1;
        left -= 1;
    }
    let nonzero = values.iter().filter(|&&v| v > 0).count();
    if nonzero <= width {
        for i in 0..values.len() {
            if values[i] > 0 && cells[i] == 0 {
                // Taken from the largest share, which has at least two cells here.
                let Some(donor) = (0..cells.len()).max_by_key(|&j| (cells[j], usize::MAX - j))
                else {
                    break;
                };
                if cells[donor] < 2 {
                    break;
                }
                cells[donor] -= 1;
                cells[i] = 1;
            }
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::assemble::RequestPart;

    fn part(name: &'static str, tokens: usize) -> RequestPart {
        RequestPart {
            part: name,
            role: "user",
            bytes: tokens * 4,
            tokens,
            name: None,
        }
    }

    #[test]
    fn apportion_adds_up_to_the_width_and_shows_every_part() {
        assert_eq!(apportion(&[1, 1, 2], 4), vec![1, 1, 2]);
        assert_eq!(apportion(&[0, 0], 10), vec![0, 0]);
        assert_eq!(apportion(&[5, 0, 5], 0), vec![0, 0, 0]);
        // 1 token in 100,000 still gets a cell, from the largest part.
        let cells = apportion(&[99_999, 1], 40);
        assert_eq!(cells, vec![39, 1]);
        // More parts than cells: the largest ones get them.
        assert_eq!(apportion(&[1, 1, 1, 10], 2).iter().sum::<usize>(), 2);
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..500 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let n = (rng % 7) as usize + 1;
            let values: Vec<usize> = (0..n)
                .map(|i| ((rng >> (i * 8)) % 1000) as usize * ((rng >> i) % 3) as usize)
                .collect();
            let width = (rng % 90) as usize;
            let cells = apportion(&values, width);
            let total: usize = values.iter().sum();
            let want = if total == 0 { 0 } else { width };
            assert_eq!(cells.iter().sum::<usize>(), want, "{values:?} in {width}");
            let nonzero = values.iter().filter(|&&v| v > 0).count();
            if total > 0 && nonzero <= width {
                for (v, c) in values.iter().zip(&cells) {
                    assert!(*v == 0 || *c > 0, "{values:?} in {width}: {cells:?}");
                }
            }
        }
    }

    #[test]
    fn segments_sum_to_the_window_and_name_every_part() {
        let parts = [
            part("system prompt", 80),
            part("catalog", 3_000),
            part("hint", 18),
            part("prior", 32),
            part("intent", 22),
            part("attachment", 500),
        ];
        // 7 tokens of framing no part carries go to the system part.
        let bar = WindowBar::from_totals(16_000, 1_500, &PartTotals::of(&parts, 3_659));
        assert_eq!(bar.window(), 17_500);
        assert_eq!(bar.total(), bar.window());
        assert_eq!(bar.tokens(WindowPart::System), 87);
        assert_eq!(bar.tokens(WindowPart::Catalog), 3_000);
        // The past-plans prior is part of the instruction (tester 5 C4: it was under system).
        assert_eq!(bar.tokens(WindowPart::Instruction), 72);
        assert_eq!(bar.tokens(WindowPart::Attachments), 500);
        assert_eq!(bar.tokens(WindowPart::Output), 1_500);
        assert_eq!(bar.tokens(WindowPart::Free), 16_000 - 3_659);
        assert_eq!(bar.used(), 3_659);
        assert_eq!(bar.over_by(), 0);
        let cells = bar.cells(50);
        assert_eq!(cells.iter().map(|(_, n)| n).sum::<usize>(), 50);
        assert!(cells.iter().all(|(_, n)| *n > 0), "{cells:?}");
        let percent: f64 = WindowPart::ALL.iter().map(|p| bar.percent(*p)).sum();
        assert!((percent - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_request_over_its_ceiling_says_by_how_much() {
        let parts = [part("system prompt", 80), part("intent", 20_000)];
        let bar = WindowBar::from_totals(16_000, 1_500, &PartTotals::of(&parts, 20_090));
        assert_eq!(bar.tokens(WindowPart::Free), 0);
        assert_eq!(bar.over_by(), 4_090);
        assert_eq!(bar.total(), 20_090 + 1_500);
    }
}
