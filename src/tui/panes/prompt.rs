//! The Prompt pane: a text box for the instruction (bracketed paste: a paste is text, never
//! keys; one of more than a few lines is an attachment), the attachments as chips under it,
//! and beside it the preview — planner, ranking with explanations, gate, request — drawn from
//! the one planned request every pane reads. The pane owns its state ([`PromptPane`]), its
//! handling of edits (what an edit asks for comes back as an [`Edit`]) and its draw; what it
//! reads besides comes in as [`PromptInputs`].

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use std::sync::Arc;

use crate::core::chart::WindowBar;
use crate::core::compare::Arm;
use crate::core::gate::Admission;
use crate::core::request::Attachment;
use crate::core::text::{display_width, pad_to};
use crate::format::thousands;
use crate::preview::Preview;
use crate::tui::action::Action;
use crate::tui::attach::{ATTACH_MAX_BYTES, is_attachment_paste, paste_label, pasted};
use crate::tui::panes::chart::window_lines;
use crate::tui::panes::scroll::Extent;
use crate::tui::panes::{clip, pane_block, request_title, shown, wrapped};
use crate::tui::send::{RESULT_LABEL, SendView, SentArm, SentKeys, ab_label};
use crate::tui::snapshot::RequestSnapshot;
use crate::tui::theme::Theme;

/// A run of at least this many text keys in one burst (keys that arrived faster than a
/// person types: see `tui::BURST_GAP_MS`) is a paste from a terminal without bracketed paste.
pub const PASTE_MIN_KEYS: usize = 4;

/// The character a key stands for inside pasted text: a plain character, Enter as the
/// carriage return it is and a line feed as a newline (the paste then reads `\r\n`, `\r`
/// and `\n` each as one line break: Windows text pasted as keys had every break doubled,
/// tester 9 T9-6), Tab as a tab. Anything else (a ctrl or alt chord, an arrow, esc) ends the
/// paste.
pub fn pasted_char(ev: &KeyEvent) -> Option<char> {
    if is_line_feed(ev) {
        return Some('\n');
    }
    if ev
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return None;
    }
    match ev.code {
        KeyCode::Char(c) => Some(c),
        KeyCode::Enter => Some('\r'),
        KeyCode::Tab => Some('\t'),
        _ => None,
    }
}

/// A key that came inside a paste (after a bracketed paste's early end marker, in the same
/// burst), added to the paste's text as the bytes the terminal read for it: a text key as
/// its character ([`pasted_char`]), a ctrl chord as its control character (ctrl+s is
/// `\x13`), esc as `\x1b`, an alt chord as `\x1b` and its character. Such text is shown with
/// its control characters escaped, so the operator sees them; none of it acts as a key. A
/// key no byte stands for alone (an arrow, a function key) is left out.
pub fn push_pasted_key(text: &mut String, ev: &KeyEvent) {
    if let Some(c) = pasted_char(ev) {
        text.push(c);
        return;
    }
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let alt = ev.modifiers.contains(KeyModifiers::ALT);
    let control = |c: char| match c {
        'a'..='z' | 'A'..='Z' => Some(char::from(c as u8 & 0x1f)),
        ' ' | '@' | '2' => Some('\0'),
        '[' | '3' => Some('\x1b'),
        '\\' | '4' => Some('\x1c'),
        ']' | '5' => Some('\x1d'),
        '^' | '6' => Some('\x1e'),
        '_' | '7' => Some('\x1f'),
        _ => None,
    };
    let key = match ev.code {
        KeyCode::Char(c) if ctrl => control(c),
        KeyCode::Char(c) => Some(c),
        KeyCode::Esc => Some('\x1b'),
        KeyCode::Backspace => Some('\x7f'),
        KeyCode::Enter => Some('\r'),
        KeyCode::Tab => Some('\t'),
        _ => None,
    };
    if let Some(c) = key {
        if alt {
            text.push('\x1b');
        }
        text.push(c);
    }
}

/// A line feed byte, which a terminal reports as ctrl+j: what `tmux send-keys -l`, scripted
/// input and some terminals' unbracketed paste send for `\n` (tester 8 F12: the text area
/// took it as "delete to the start of the line", and pasted lines vanished).
pub fn is_line_feed(ev: &KeyEvent) -> bool {
    ev.code == KeyCode::Char('j') && ev.modifiers == KeyModifiers::CONTROL
}

/// Where a burst of keys is being typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The Prompt box: many lines, so an Enter or Tab in a paste is text.
    Box,
    /// A one-line field (a search, the attach path): a line holds no newline, so an Enter
    /// ends the field even inside a burst, and a Tab keeps its meaning too.
    Line,
}

/// The text of the run of text keys at the start of `keys`, when it is long enough to be a
/// paste: inserted as one edit, previewed once. In the Prompt box its Tabs and Enters are
/// text, never "next pane" or anything else a key would do; in a one-line field the run
/// ends before an Enter or Tab, which then act as keys.
pub fn paste_run(keys: &[KeyEvent], field: TextField) -> Option<(String, usize)> {
    let text: String = keys
        .iter()
        .map_while(|k| {
            pasted_char(k).filter(|c| field == TextField::Box || !matches!(c, '\n' | '\r' | '\t'))
        })
        .collect();
    let n = text.chars().count();
    (n >= PASTE_MIN_KEYS).then_some((text, n))
}

fn new_input() -> ratatui_textarea::TextArea<'static> {
    let mut t = ratatui_textarea::TextArea::default();
    t.set_placeholder_text("Type or paste a prompt: the preview follows as you type.");
    // Long lines wrap (at words, a long word at its characters): nothing scrolls sideways.
    t.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
    t
}

/// The Prompt pane's own state: the instruction's text box, the attachments and their
/// chips, the attach key's path line, and how far the preview is scrolled.
#[derive(Debug, Clone)]
pub struct PromptPane {
    /// The instruction.
    pub input: ratatui_textarea::TextArea<'static>,
    /// Bumped on every edit; the request is planned once a version has been still.
    pub version: u64,
    /// The preview's first line on screen.
    pub scroll: usize,
    /// Sent beside the instruction (pastes of more than a few lines, attached files), and
    /// what each one's chip is called.
    pub attachments: Arc<Vec<Attachment>>,
    pub chip_labels: Vec<String>,
    /// The selected chip (the one the remove key removes).
    pub chip: usize,
    /// Pastes made attachments so far (their names: `paste 1`, `paste 2`…).
    pub pastes: usize,
    /// The attach key's path line, while it is open.
    pub attach_path: Option<String>,
    /// A file being read, and what went wrong with the last attach or paste.
    pub attach_reading: Option<u64>,
    pub attach_error: Option<String>,
}

impl Default for PromptPane {
    fn default() -> Self {
        PromptPane {
            input: new_input(),
            version: 0,
            scroll: 0,
            attachments: Arc::new(Vec::new()),
            chip_labels: Vec::new(),
            chip: 0,
            pastes: 0,
            attach_path: None,
            attach_reading: None,
            attach_error: None,
        }
    }
}

/// What an edit of the Prompt pane asks of the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Nothing changed.
    Nothing,
    /// The instruction changed: plan the request once this version has been still.
    Instruction(u64),
    /// The attachments changed: plan the request now.
    Attachments,
    /// Read the file at this typed path as an attachment.
    Read(String),
}

impl PromptPane {
    /// The instruction as one string.
    pub fn text(&self) -> String {
        self.input.lines().join("\n")
    }

    /// Whether anything is asked: an instruction or an attachment.
    pub fn asks_anything(&self) -> bool {
        !self.text().trim().is_empty() || !self.attachments.is_empty()
    }

    fn edited(&mut self) -> Edit {
        // A failed attach's line is about that try: once the text moves on, it goes (it
        // stayed through clears, new text and sends: tester 17 F6).
        self.attach_error = None;
        self.version += 1;
        Edit::Instruction(self.version)
    }

    /// Empty the text box (the chips stay).
    pub fn clear(&mut self) -> Edit {
        self.attach_error = None;
        if self.text().is_empty() {
            return Edit::Nothing;
        }
        self.input = new_input();
        self.scroll = 0;
        self.edited()
    }

    /// A key typed into the text box.
    pub fn key(&mut self, input: ratatui_textarea::Input) -> Edit {
        // A line feed is a new line here, not the text area's "delete to line start".
        let line_feed = input.key == ratatui_textarea::Key::Char('j')
            && input.ctrl
            && !input.alt
            && !input.shift;
        if line_feed {
            self.input.insert_newline();
            return self.edited();
        }
        // A character typed alone goes in as a pasted one would (an input method can type
        // a bidi mark): one rule for what the box holds and sends.
        if let ratatui_textarea::Key::Char(c) = input.key
            && !input.ctrl
            && !input.alt
        {
            let mut one = [0u8; 4];
            let typed = crate::core::terminal_text::for_prompt_box(c.encode_utf8(&mut one));
            if typed.len() != c.len_utf8() {
                return if self.input.insert_str(typed) {
                    self.edited()
                } else {
                    Edit::Nothing
                };
            }
        }
        if self.input.input(input) {
            self.edited()
        } else {
            Edit::Nothing
        }
    }

    /// A paste: text in the box, or beyond a few lines an attachment (one too big for the
    /// console is refused with one line).
    pub fn paste(&mut self, text: String) -> Edit {
        // One event, inserted as text: a multi-line paste never submits anything.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        if is_attachment_paste(&text) {
            if text.len() as u64 > ATTACH_MAX_BYTES {
                self.attach_error = Some(format!(
                    "paste of {} bytes not attached: more than the {} an attachment may hold here",
                    thousands(text.len()),
                    thousands(ATTACH_MAX_BYTES as usize)
                ));
                return Edit::Nothing;
            }
            self.pastes += 1;
            let label = paste_label(&text);
            return self.attach(label, pasted(self.pastes, text));
        }
        // The box shows what is sent: a control, bidi or invisible character pasted into it
        // would be unseen there yet sent, so it goes in as its visible escape (`\x1b`,
        // `\u{202e}`); the joiners of emoji and scripts stay as written.
        let text = crate::core::terminal_text::for_prompt_box(&text).into_owned();
        if self.input.insert_str(text) {
            self.edited()
        } else {
            Edit::Nothing
        }
    }

    /// Add an attachment as a chip, selected.
    fn attach(&mut self, label: String, attachment: Attachment) -> Edit {
        Arc::make_mut(&mut self.attachments).push(attachment);
        self.chip_labels.push(label);
        self.chip = self.chip_labels.len() - 1;
        self.attach_error = None;
        Edit::Attachments
    }

    /// Remove the selected chip.
    pub fn remove_selected(&mut self) -> Edit {
        if self.chip >= self.chip_labels.len() {
            return Edit::Nothing;
        }
        Arc::make_mut(&mut self.attachments).remove(self.chip);
        self.chip_labels.remove(self.chip);
        self.chip = self.chip.min(self.chip_labels.len().saturating_sub(1));
        Edit::Attachments
    }

    /// Select the next chip (round to the first).
    pub fn next_chip(&mut self) {
        if !self.chip_labels.is_empty() {
            self.chip = (self.chip + 1) % self.chip_labels.len();
        }
    }

    /// Open the attach key's path line.
    pub fn open_path_line(&mut self) {
        self.attach_path = Some(String::new());
        self.attach_error = None;
    }

    /// A key while the path line is open: typed into it, enter asks for the file to be
    /// read, esc closes it. `None` for what the line does not take (quit, background
    /// answers).
    pub fn path_key(&mut self, action: &Action) -> Option<Edit> {
        let path = self.attach_path.as_mut()?;
        // A path is at most PATH_MAX bytes: a paste of megabytes into this line was kept
        // whole, and its error wrapped over the whole box (tester 17 F6).
        // A pasted Tab is part of the name (tester 34 F4: a file with one could not be
        // attached); shown escaped. Typed, Tab is a key, as in every one-line field.
        let mut add = |c: char, pasted: bool| {
            let taken = !c.is_control() || (pasted && c == '\t');
            if taken && path.len() + c.len_utf8() <= PATH_MAX_BYTES {
                path.push(c);
            }
        };
        match action {
            Action::Char(c) => add(*c, false),
            Action::Backspace => {
                path.pop();
            }
            Action::Paste(text) => text.chars().for_each(|c| add(c, true)),
            Action::Back => self.attach_path = None,
            Action::Confirm => {
                let typed = path.trim().to_string();
                self.attach_path = None;
                return Some(if typed.is_empty() {
                    Edit::Nothing
                } else {
                    Edit::Read(typed)
                });
            }
            _ => return None,
        }
        Some(Edit::Nothing)
    }

    /// The file asked for is being read under `request`.
    pub fn reading(&mut self, request: u64) {
        self.attach_reading = Some(request);
        self.attach_error = None;
    }

    /// A file read came back: attached, or its one-line error. An answer for a read that
    /// is no longer awaited is dropped.
    pub fn read_back(&mut self, request: u64, result: Result<Attachment, String>) -> Edit {
        if self.attach_reading != Some(request) {
            return Edit::Nothing;
        }
        self.attach_reading = None;
        match result {
            Ok(a) => self.attach(a.name.clone(), a),
            Err(e) => {
                // An error line like stderr's: a configured key in the path reads
                // [REDACTED], as the CLI says the same error (tester 24 N5).
                self.attach_error = Some(crate::llm::redact::for_output(&e).into_owned());
                Edit::Nothing
            }
        }
    }
}

/// The longest path the attach line takes (Linux's PATH_MAX); what comes after is dropped.
pub const PATH_MAX_BYTES: usize = 4096;

/// What the Prompt pane reads besides its own state.
#[derive(Clone, Copy)]
pub struct PromptInputs<'a> {
    pub focused: bool,
    /// The A/B arms sent beside `compacted`, and how many models are marked to be sent to
    /// besides the selected one.
    pub ab: &'a [Arm],
    pub marked: usize,
    /// The one planned request (none until the first plan comes back), and whether a
    /// newer one is being planned.
    pub request: Option<&'a RequestSnapshot>,
    pub planning: bool,
    pub send: &'a SendView,
    /// The Sent table belongs to another request than the Preview's (another instruction,
    /// other attachments, or a model it did not ask).
    pub sent_earlier: bool,
    /// The keys the Sent table's heading names (the live keymap's).
    pub sent_keys: &'a SentKeys,
}

/// The text box, the attachment chips under it, and the attach key's path line.
pub fn draw_input(
    frame: &mut Frame,
    area: Rect,
    pane: &PromptPane,
    inp: &PromptInputs,
    theme: &Theme,
) {
    let focused = inp.focused;
    let text = pane.text();
    let title = format!(
        " 3 Prompt · {} lines, {} bytes{} · A/B {}{}{} ",
        pane.input.lines().len(),
        thousands(text.len()),
        match pane.attachments.len() {
            0 => String::new(),
            n => format!(" · {n} attached"),
        },
        ab_label(inp.ab),
        if inp.marked == 0 {
            String::new()
        } else {
            format!(" · +{} marked", inp.marked)
        },
        if focused {
            " · esc leaves"
        } else {
            " · p to type"
        }
    );
    let block = pane_block(title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let chips = chip_lines(pane, inp.request, inner.width as usize, theme);
    // The text box keeps at least a line; chips beyond what is left are not drawn.
    let chips_height = (chips.len() as u16).min(inner.height.saturating_sub(1));
    let [text_area, chips_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(chips_height)]).areas(inner);
    frame.render_widget(Paragraph::new(chips), chips_area);
    let mut input = pane.input.clone();
    input.set_style(theme.base);
    input.set_cursor_line_style(theme.base);
    input.set_placeholder_style(theme.muted);
    if !focused {
        input.set_cursor_style(theme.base);
    }
    frame.render_widget(&input, text_area);
}

/// Fewer characters of a chip's name than this, and its facts go on a line of their own.
const CHIP_LABEL_MIN: usize = 16;

/// One line per attachment — `▸ name or first line · size · tokens · gate decision` — the
/// selected one marked, then the path line while the attach key has it open, then the last
/// attach error. Sizes come from the planned request; a chip added since shows `planning…`.
pub fn chip_lines<'a>(
    pane: &PromptPane,
    request: Option<&RequestSnapshot>,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let planned = request.map(|r| &r.planned.attachments);
    // The names the model is told (`paste 1`, `notes.txt (2)`), one rule for every view.
    let sent = crate::core::request::sent_names(&pane.attachments);
    let mut out = Vec::new();
    for (i, ((label, a), sent)) in pane
        .chip_labels
        .iter()
        .zip(pane.attachments.iter())
        .zip(&sent)
        .enumerate()
    {
        let selected = i == pane.chip;
        let view = planned
            .and_then(|p| p.get(i))
            .filter(|v| v.name == *sent && v.size.bytes == a.text.len());
        // The tokens the request table counts for it, its framing included (tester 19 F3).
        let facts = match view {
            Some(v) => format!(
                "{} B · {}{} tok sent · {}",
                thousands(v.size.bytes),
                if v.size.exact { "" } else { "~" },
                thousands(v.sent_tokens),
                v.gate.verdict()
            ),
            None => format!("{} B · planning…", thousands(a.text.len())),
        };
        let mark = if selected { "▸ " } else { "  " };
        let style = if selected { theme.accent } else { theme.base };
        let gate_style = match view.map(|v| v.gate.admission) {
            _ if view.is_some_and(|v| v.gate.is_over()) => theme.error,
            Some(Admission::Raw) => theme.ok,
            Some(Admission::Tight | Admission::Briefing) => theme.warn,
            Some(Admission::Over) => theme.error,
            None => theme.muted,
        };
        // A file is called what it is sent as; a paste by the name the model gets, then
        // its first line (tester 19 F3: the chip showed only the first line).
        let (name, first_line) = if *label == a.name {
            (shown(sent).to_string(), None)
        } else {
            (
                format!("{} — ", shown(sent)),
                Some(shown(label).to_string()),
            )
        };
        // The name stays whole as long as it fits; the first line gives way first.
        let fit = |room: usize| match &first_line {
            Some(l) if name.chars().count() < room => {
                format!(
                    "{name}{}",
                    crate::format::elide(l, room - name.chars().count())
                )
            }
            Some(_) => crate::format::elide(name.trim_end_matches([' ', '—']), room),
            None => crate::format::elide(&name, room),
        };
        let label = format!("{name}{}", first_line.as_deref().unwrap_or(""));
        let room = width.saturating_sub(2);
        let one_line = label.chars().count() + 3 + facts.chars().count();
        if one_line <= room || room >= CHIP_LABEL_MIN + 3 + facts.chars().count() {
            // Name and facts on one line, the name giving way first.
            let label_room = room.saturating_sub(3 + facts.chars().count());
            out.push(Line::from(vec![
                Span::styled(mark, style),
                Span::styled(fit(label_room), style),
                Span::styled(" · ", theme.muted),
                Span::styled(facts, gate_style),
            ]));
        } else {
            // Too narrow for both: the name, then its facts under it.
            out.push(Line::from(vec![
                Span::styled(mark, style),
                Span::styled(fit(room), style),
            ]));
            out.push(Line::from(vec![
                Span::raw("    "),
                Span::styled(clip(&facts, width.saturating_sub(4)), gate_style),
            ]));
        }
    }
    if let Some(path) = &pane.attach_path {
        out.push(Line::from(vec![
            Span::styled("attach file: ", theme.accent),
            Span::raw(shown(&format!("{path}▏"))),
            Span::styled(" enter attaches · esc cancels", theme.muted),
        ]));
    } else if pane.attach_reading.is_some() {
        out.push(Line::styled("attach: reading the file…", theme.muted));
    }
    if let Some(e) = &pane.attach_error {
        out.extend(wrapped(&format!("attach: {e}"), width, theme.error));
    }
    out
}

/// The live preview beside the text box: the model and tier it was computed for in its
/// title, the window bar, then planner, ranking, gate and request. With no prompt, the bar
/// is the catalog's request (the same model and tier as the Catalog pane).
pub fn draw_preview(
    frame: &mut Frame,
    area: Rect,
    pane: &PromptPane,
    inp: &PromptInputs,
    theme: &Theme,
) {
    let snapshot = inp.request;
    let updating = if inp.planning { " · updating…" } else { "" };
    let title = match snapshot.map(|r| &r.planned) {
        Some(p) => request_title(
            "Preview",
            &p.model,
            p.tier,
            p.tier_overridden,
            updating,
            area.width,
        ),
        None => format!(" Preview{updating} "),
    };
    let block = pane_block(title, false, theme);
    let inner = block.inner(area);
    let lines = preview_rows(inp, inner.width as usize, theme);
    let extent = Extent {
        rows: lines.len(),
        height: inner.height as usize,
    };
    let scroll = extent.clamp(pane.scroll) as u16;
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), area);
}

/// The Preview's rows for a pane `width` wide (each cut at its edge, never wrapped).
fn preview_rows<'a>(inp: &PromptInputs, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let snapshot = inp.request;
    // Sent results first: they are what the operator just asked for.
    let mut lines: Vec<Line> = send_lines(inp.send, inp.sent_earlier, inp.sent_keys, width, theme);
    lines.extend(window_section(snapshot.map(|r| &r.window), width, theme));
    if let Some(e) = snapshot.and_then(|r| r.cache_error.as_deref()) {
        lines.extend(wrapped(&format!("output cache: {e}"), width, theme.error));
    }
    // A briefed part that is not kept: the model sees only its map (tester 19 F14).
    for w in snapshot.map(|r| r.planned.not_kept()).unwrap_or_default() {
        lines.extend(wrapped(&w, width, theme.warn));
    }
    if let Some(e) = snapshot.and_then(|r| r.semantic_error.as_deref()) {
        lines.extend(wrapped(
            &format!("semantic layer: {e}; ranked lexically"),
            width,
            theme.error,
        ));
    }
    match snapshot.map(|r| &r.planned) {
        Some(p) if p.asked => {
            let semantic = match snapshot {
                Some(r) if r.semantic_waiting => SemanticMark::Waiting,
                Some(r) if r.semantic.is_some() => SemanticMark::On,
                _ => SemanticMark::Off,
            };
            lines.extend(preview_lines(p, semantic, width, theme));
        }
        _ => lines.push(Line::styled(
            "Planner categories, the ranked catalog, the gate decision and the request appear here.",
            theme.muted,
        )),
    }
    lines
}

/// The Preview's rows in `area` (its pane, frame included), and how many show.
pub fn preview_extent(inp: &PromptInputs, area: Rect) -> Extent {
    let inner = pane_block(String::new(), false, &Theme::plain()).inner(area);
    Extent {
        rows: preview_rows(inp, inner.width as usize, &Theme::plain()).len(),
        height: inner.height as usize,
    }
}

/// The width inside the Preview's frame, `area` (its pane, frame included).
pub fn preview_width(area: Rect) -> usize {
    pane_block(String::new(), false, &Theme::plain())
        .inner(area)
        .width as usize
}

/// `WINDOW 17,500 = 16,000 in + 1,500 out` (and `· over by N` when the request does not
/// fit), the bar, its legend.
pub fn window_section<'a>(bar: Option<&WindowBar>, width: usize, theme: &Theme) -> Vec<Line<'a>> {
    let Some(bar) = bar else {
        return vec![
            section("WINDOW", theme),
            Line::styled("no request planned yet (compacting…)", theme.muted),
        ];
    };
    let mut head = vec![Span::styled(
        clip(
            &format!(
                "WINDOW {} = {} in + {} out",
                thousands(bar.window()),
                thousands(bar.input_tokens),
                thousands(bar.output_tokens)
            ),
            width,
        ),
        theme.accent,
    )];
    if bar.over_by() > 0 {
        head.push(Span::styled(
            format!(" · over by {}", thousands(bar.over_by())),
            theme.error,
        ));
    }
    let mut lines = vec![Line::from(head)];
    lines.extend(window_lines(bar, width, theme));
    lines
}

fn section<'a>(title: &str, theme: &Theme) -> Line<'a> {
    Line::styled(title.to_string(), theme.accent)
}

/// What the RANKING line says of the semantic layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticMark {
    /// Off, or it could not embed this question (the Preview says why above).
    Off,
    /// It ranked this request.
    On,
    /// On, but the text is still being typed: ranked lexically until it settles.
    Waiting,
}

pub fn preview_lines<'a>(
    p: &Preview,
    semantic: SemanticMark,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    let pl = &p.planner;
    out.push(section("PLANNER", theme));
    if let Some(h) = &pl.hint {
        out.push(Line::raw(clip(h, width)));
    }
    out.push(Line::raw(clip(
        &format!(
            "tools {}/{} · memory {}/{} · thinking {}{}",
            pl.kept,
            pl.total,
            pl.memory.max_facts,
            pl.memory.max_tokens,
            pl.thinking,
            pl.full_set_reason
                .as_deref()
                .map(|r| format!(" · all: {r}"))
                .unwrap_or_default()
        ),
        width,
    )));
    if let Some(line) = pl.ranked_in_line() {
        out.push(Line::raw(clip(&line, width)));
    }
    for s in pl.scores.iter().filter(|s| s.score != 0.0).take(6) {
        let style = if s.fired { theme.ok } else { theme.muted };
        out.push(Line::from(vec![
            Span::styled(if s.fired { "● " } else { "○ " }, style),
            Span::styled(
                clip(
                    &format!(
                        "{:<10} {:>4.1}/{:<3} {}",
                        s.category,
                        s.score,
                        s.threshold,
                        s.reasons.join(", ")
                    ),
                    width.saturating_sub(2),
                ),
                style,
            ),
        ]));
    }
    let r = &p.ranking;
    out.push(section(
        &format!(
            "RANKING · confidence {:.2}{}{}",
            r.confidence.value,
            if r.escalate {
                " · filter would escalate"
            } else {
                ""
            },
            match semantic {
                SemanticMark::On => " · semantic layer on",
                SemanticMark::Waiting => " · semantic layer once typing pauses",
                SemanticMark::Off => "",
            }
        ),
        theme,
    ));
    let names = p.names_shown();
    for (i, e) in r.top.iter().enumerate().take(8) {
        let line = format!("{:>2}. {}", i + 1, e.one_line_among(names));
        let cut = line.chars().count() > width;
        out.push(Line::raw(clip(&line, width)));
        // A cut line loses its end first, where the semantic part and the placement are:
        // they get a line of their own, so the order on screen keeps its reasons.
        if cut && let Some(tail) = e.tail() {
            out.push(Line::styled(
                clip(&format!("    ↳ {tail}"), width),
                theme.muted,
            ));
        }
    }
    let g = &p.gate;
    let gate_style = match g.admission {
        _ if g.is_over() => theme.error,
        Admission::Raw => theme.ok,
        Admission::Tight => theme.warn,
        Admission::Briefing => theme.warn,
        Admission::Over => theme.error,
    };
    out.push(section("GATE", theme));
    out.push(Line::styled(
        clip(
            &format!(
                "{}: {} tokens of {} available",
                g.verdict(),
                thousands(p.prompt.tokens),
                thousands(g.budget.available())
            ),
            width,
        ),
        gate_style,
    ));
    if let Some(b) = &g.briefing {
        out.push(Line::raw(clip(&format!("briefing: {}", b.hint), width)));
        for l in b.text.lines().take(8) {
            out.push(Line::styled(clip(l, width), theme.muted));
        }
    }
    for a in &p.attachments {
        let style = match a.gate.admission {
            _ if a.gate.is_over() => theme.error,
            Admission::Raw => theme.ok,
            Admission::Tight | Admission::Briefing => theme.warn,
            Admission::Over => theme.error,
        };
        out.push(Line::styled(
            clip(
                &format!(
                    "attachment {} ({}): {} tokens → {}{} · ranker read {} outline lines",
                    a.name,
                    a.kind.label(),
                    thousands(a.size.tokens),
                    a.gate.verdict(),
                    if a.gate.briefing.is_some() {
                        format!(" ({} tokens sent)", thousands(a.sent_tokens))
                    } else {
                        String::new()
                    },
                    a.outline.len()
                ),
                width,
            ),
            style,
        ));
        if let Some(b) = &a.gate.briefing {
            out.push(Line::styled(
                clip(&format!("  briefing: {}", b.hint), width),
                theme.muted,
            ));
        }
    }
    let q = &p.request;
    // Everything ctrl+s sends beside the messages is said here, as `preview` says it
    // (tester 19 F15: the response format and the sampling were sent unseen).
    let format = q
        .response_format
        .map(|f| format!(" · response_format {f}"))
        .unwrap_or_default();
    out.push(section(
        &format!(
            "REQUEST · {} tokens · max_tokens {}{format}",
            thousands(q.input_tokens),
            thousands(q.max_tokens)
        ),
        theme,
    ));
    if q.sampling != crate::core::budget::Sampling::default() {
        out.push(Line::raw(clip(
            &format!("sampling: {}", q.sampling.label()),
            width,
        )));
    }
    for part in &q.parts {
        out.push(Line::raw(clip(
            &format!(
                "{:<14} {:<6} {:>8} tokens",
                part.part,
                part.role,
                thousands(part.tokens)
            ),
            width,
        )));
    }
    // What the parts leave of the request's count, so the rows add up to it (`PartTotals`,
    // the figures `preview` and `compact` print).
    out.push(Line::raw(clip(
        &format!(
            "{:<14} {:<6} {:>8} tokens",
            "framing",
            "",
            thousands(q.totals.framing)
        ),
        width,
    )));
    // The past-plans part: which decompositions, from which plans.
    for d in p.past_steps.iter().flat_map(|prior| &prior.sent) {
        out.push(Line::styled(
            clip(
                &format!(
                    "prior: {} ({} plans: {})",
                    d.tools.join(" → "),
                    d.plans,
                    d.plan_ids.join(", ")
                ),
                width,
            ),
            theme.muted,
        ));
    }
    out.push(Line::raw(clip(
        &format!(
            "cost ${:.6} uncached · ${:.6} cached · {}",
            q.cost.input_uncached, q.cost.input_cached, q.cache_note
        ),
        width,
    )));
    // Where ctrl+s sends it, and why it would not (tester 19 F2, F10).
    if let Some(route) = &p.route {
        let style = |l: &str| {
            if l.starts_with("not sent") {
                theme.warn
            } else {
                theme.muted
            }
        };
        let lines = route
            .lines()
            .into_iter()
            .map(|l| {
                let style = style(&l);
                Line::styled(l, style)
            })
            .collect();
        out.extend(crate::tui::panes::scroll::wrap_lines(lines, width));
    }
    out
}

/// The last send, side by side: one column per model and arm, above the preview; marked
/// as earlier, with what it asked, when the Preview shows another request (`earlier`).
/// When not every column fits, only those that do, around the selected one, under a line
/// `results 4–6 of 10` and with `‹ 3` / `4 ›` for those off either side.
/// The heading names the keys `keys` (the live keymap's); every column is laid out by the
/// cells a terminal shows, as the CLI's `send` table is (tester 50 F8: padded by characters,
/// a CJK model id pushed the next column right and cut its arm to `…`).
pub fn send_lines<'a>(
    v: &SendView,
    earlier: bool,
    keys: &SentKeys,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    if let Some(e) = &v.error {
        out.extend(wrapped(&format!("send: {e}"), width, theme.error));
        out.push(Line::raw(""));
    }
    if v.running.is_some() {
        // What the send waits for: the models (esc cancels them), or only the store, which
        // esc cannot hurry (tester 10 T10-16: it still said `Sending… (esc cancels)`).
        let head = match v.storing {
            None => "Sending… (esc cancels)",
            Some(false) => "Storing the answers…",
            Some(true) => {
                "Storing… waiting for the store's write lock (another process is writing)"
            }
        };
        out.extend(wrapped(head, width, theme.accent));
        // A call's line names its call already; the store's note does not. Wrapped whole:
        // the store's note says what happens at its end (tester 10 T10-16: it was cut at the
        // pane's edge, and each call's label read twice).
        for (label, line) in &v.progress {
            let text = if line.starts_with(label.as_str()) {
                format!("  {line}")
            } else {
                format!("  {label}: {line}")
            };
            out.extend(wrapped(&text, width, theme.base));
        }
        out.push(Line::raw(""));
        return out;
    }
    let Some(o) = &v.outcome else {
        return out;
    };
    match v.asked.as_ref().filter(|_| earlier) {
        Some(asked) => {
            out.push(section(
                &clip(
                    &format!("Sent earlier, not the request below{}", keys.hint()),
                    width,
                ),
                theme,
            ));
            let attached = match asked.attachments.len() {
                0 => String::new(),
                n => format!(" + {n} attached"),
            };
            let said = format!(
                "  asked {}{attached} of {}",
                crate::core::terminal_text::quoted(&clip(&asked.prompt.replace('\n', " "), 60)),
                asked.models_line()
            );
            out.extend(wrapped(&said, width, theme.muted));
        }
        None => out.push(section(
            &clip(&format!("Sent{}", keys.hint()), width),
            theme,
        )),
    }
    // Only the columns that fit, scrolled to keep the selected one in view, with how many
    // lie off either side (a result selected out of sight had opened unseen).
    const LABEL: usize = RESULT_LABEL;
    let win = v.window(width);
    let col = win.col;
    let results: &[SentArm] = o.results.get(win.range()).unwrap_or_default();
    if win.scrolls() {
        let last = win.first + win.shown;
        out.push(Line::styled(
            clip(
                &format!("results {}–{last} of {}", win.first + 1, win.count),
                width,
            ),
            theme.muted,
        ));
    }
    let dash = || "-".to_string();
    // Cut and padded by cells (`core::text::pad_to`, as the CLI's tables): a column starts
    // at one place on every row whatever the script.
    let cell = |text: &str| pad_to(&clip(text, col.saturating_sub(1)), col);
    // An id is told apart by its end (`send-…-3`): cut in the middle, not at the edge
    // (tester 8 F22: at 80×24 every plan id read `send-17…`).
    let id_cell = |text: &str| {
        pad_to(
            &crate::format::elide(text, col.saturating_sub(1).max(1)),
            col,
        )
    };
    let row_of = |label: &str,
                  each: &dyn Fn(&SentArm) -> String,
                  cell: &dyn Fn(&str) -> String|
     -> Line<'a> {
        let mut text = pad_to(label, LABEL);
        for r in results {
            text.push_str(&cell(&each(r)));
        }
        Line::raw(clip(&text, width))
    };
    let row = |label: &str, each: &dyn Fn(&SentArm) -> String| row_of(label, each, &cell);
    // Each column is named by its model and its arm (or `[baseline]`): on one line when
    // both fit, else the model on one line (cut in the middle, keeping the tail that tells
    // ids apart) and the arm under it (tester 5 C10: at 120×40 the ids were cut to a letter).
    let marks: Vec<&str> = win
        .range()
        .map(|i| if i == v.selected { "▶" } else { " " })
        .collect();
    let arms: Vec<String> = results
        .iter()
        .map(|r| {
            if r.baseline {
                "[baseline]".to_string()
            } else {
                format!("[{}]", r.arm)
            }
        })
        .collect();
    let one_line = results
        .iter()
        .zip(&arms)
        .all(|(r, arm)| 1 + display_width(&shown(&r.model)) + 1 + display_width(arm) < col);
    let before = match win.before() {
        0 => String::new(),
        n => format!("‹ {n}"),
    };
    let mut header = pad_to(&before, LABEL);
    let mut under = pad_to("", LABEL);
    for ((r, arm), mark) in results.iter().zip(&arms).zip(&marks) {
        if one_line {
            header.push_str(&cell(&format!("{mark}{} {arm}", shown(&r.model))));
        } else {
            let model = crate::format::elide(&shown(&r.model), col.saturating_sub(2).max(1));
            header.push_str(&cell(&format!("{mark}{model}")));
            // The arm whole where its brackets do not fit (`compacted`, not `[compa…`).
            let arm = if display_width(arm) + 1 < col {
                arm.clone()
            } else {
                arm.trim_matches(['[', ']']).to_string()
            };
            under.push_str(&cell(&format!(" {arm}")));
        }
    }
    if win.after() > 0 {
        header.push_str(&format!("{} ›", win.after()));
    }
    out.push(Line::styled(clip(&header, width), theme.accent));
    if !one_line {
        out.push(Line::styled(clip(&under, width), theme.accent));
    }
    out.push(row("valid plan", &|s| s.live.valid_plan_cell()));
    out.push(row("steps", &|s| s.live.steps_cell()));
    out.push(row("unknown tools", &|s| s.live.unknown_tools_cell()));
    out.push(row("tokens in/out", &|s| s.live.tokens_cell()));
    out.push(row("cached tokens", &|s| s.live.cached_tokens_cell()));
    out.push(row("latency", &|s| {
        if s.live.not_sent.is_some() {
            dash()
        } else {
            format!("{} ms", s.live.facts.latency_ms)
        }
    }));
    out.push(row("cost", &|s| {
        s.live
            .facts
            .cost_usd
            .map_or_else(dash, |c| format!("${c:.6}"))
    }));
    out.push(row_of("plan id", &|s| s.live.stored_cell(), &id_cell));
    if o.results.iter().any(|r| r.baseline) {
        out.push(row("vs baseline", &|s| {
            s.gap.as_ref().map_or_else(dash, |g| g.category.to_string())
        }));
    }
    // Why each one failed, and what to do: the cells above only name the class.
    for r in &o.results {
        let why = match (&r.live.not_sent, &r.live.failure) {
            (Some(why), _) => why.clone(),
            (None, Some(f)) => format!("{}: {} → {}", f.class, f.detail, f.action),
            (None, None) => continue,
        };
        out.extend(wrapped(&format!("{}: {why}", r.label()), width, theme.warn));
    }
    // An answer the store could not take: said, with why. The console keeps it (the
    // status line counts them) until it is stored again or, at quit, written to a file.
    for r in &o.results {
        if let Some(why) = &r.live.store_error {
            out.extend(wrapped(
                &format!(
                    "{}: NOT STORED, kept until stored again (see the status line): {why}",
                    r.label()
                ),
                width,
                theme.error,
            ));
        }
    }
    out.push(Line::raw(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 10 T10-16: while sending, the store's note ("another process is writing …;
    /// each answer waits …") was cut at the pane's edge before it said what happens, and a
    /// call's label read twice (`m [compacted]: m [compacted] on m · pass 1`).
    #[test]
    fn send_progress_is_wrapped_whole_and_names_each_call_once() {
        let mut v = SendView {
            running: Some((1, crate::llm::client::Cancel::default())),
            ..Default::default()
        };
        let label = "keyed/m1 [compacted]";
        v.progress.insert(
            label.into(),
            format!("{label} on keyed/m1 · pass 1 · sending"),
        );
        v.progress.insert(
            "store".into(),
            "another process is writing /tmp/home/history.sqlite; each answer waits up to 60 s for it, and one that cannot be stored is kept until stored again".into(),
        );
        let text: Vec<String> = send_lines(&v, false, &SentKeys::default(), 60, &Theme::default())
            .iter()
            .map(|l| l.to_string())
            .collect();
        let all = text.join("\n");
        assert!(text.iter().all(|l| l.chars().count() <= 60), "{all}");
        assert!(all.contains("stored again"), "{all}");
        assert_eq!(all.matches(label).count(), 1, "{all}");
    }

    /// Tester 10 T10-16 residual: once every call has answered and the answers only wait
    /// for another process's write lock, the pane said `Sending… (esc cancels)` and esc did
    /// nothing. It says what it waits for, offers no esc, and esc leaves the pane.
    #[test]
    fn a_send_waiting_only_for_the_store_says_so_and_offers_no_esc() {
        use crate::tui::send::SendNews;
        let mut v = SendView::default();
        let mut next = 1;
        let req = v.start(&mut next, "x".into(), Arc::new(Vec::new()), Vec::new(), &[]);
        let shown = |v: &SendView| {
            send_lines(v, false, &SentKeys::default(), 60, &Theme::default())
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(shown(&v).contains("Sending… (esc cancels)"));
        assert!(v.cancel().is_some());
        v.progress(req.request, SendNews::Storing { waiting: true });
        let all = shown(&v);
        assert!(all.contains("waiting for the store's write lock"), "{all}");
        assert!(!all.contains("esc") && !all.contains("Sending"), "{all}");
        assert!(v.cancel().is_none(), "esc has nothing to cancel");
        v.progress(req.request, SendNews::Storing { waiting: false });
        let all = shown(&v);
        assert!(
            all.contains("Storing the answers…") && !all.contains("esc"),
            "{all}"
        );
        // The next send starts as sending again.
        v.finished(req.request, Err("x".into()));
        v.start(&mut next, "y".into(), Arc::new(Vec::new()), Vec::new(), &[]);
        assert!(shown(&v).contains("Sending… (esc cancels)"));
    }
}
