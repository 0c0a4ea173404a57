//! Text that came from outside (files, stores, servers, MCP children) made safe to show on a
//! terminal: every control character and every bidi override is replaced by a visible escape,
//! so an ESC, an OSC 52 clipboard write or a right-to-left override is seen, never obeyed.
//!
//! The one function both front ends use: the CLI's text sink and the console's panes.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with C0 controls (except `\n` and `\t`), DEL, C1 controls and bidi embeddings,
/// overrides and isolates shown as escapes: ESC → `\x1b`, BEL → `\x07`, CR → `\r`,
/// DEL → `\x7f`, U+009B → `\u{9b}`, U+202E → `\u{202e}`. Borrowed when nothing changes.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    escape_where(text, needs_escape)
}

/// `text` with every character `escaped` says shown as its escape; borrowed when none is.
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    replace_where(text, escaped, push_escape)
}

/// `text` with every character `chosen` says written by `write`, and every variation
/// selector that shapes nothing ([`shapes_nothing`]); borrowed when none is.
fn replace_where(
    text: &str,
    chosen: impl Fn(char) -> bool,
    write: fn(&mut String, char),
) -> Cow<'_, str> {
    let mut before = None;
    rewrite(
        text,
        |c| {
            let replaced = escaped_after(before, c, &chosen);
            before = Some(c);
            replaced
        },
        write,
    )
}

/// Whether `c`, after `before`, is written as an escape, where `escaped` names the
/// characters that always are: those, and a variation selector that shapes nothing.
fn escaped_after(before: Option<char>, c: char, escaped: impl Fn(char) -> bool) -> bool {
    escaped(c) || (is_variation_selector(c) && shapes_nothing(before, escaped))
}

/// `text` with every character `replaced` says (asked of each in order) written by `write`;
/// borrowed when none is.
fn rewrite<'t>(
    text: &'t str,
    mut replaced: impl FnMut(char) -> bool,
    write: fn(&mut String, char),
) -> Cow<'t, str> {
    let mut out: Option<String> = None;
    for (at, c) in text.char_indices() {
        match (&mut out, replaced(c)) {
            (Some(out), true) => write(out, c),
            (Some(out), false) => out.push(c),
            (None, true) => {
                let mut started = String::with_capacity(text.len() + 8);
                started.push_str(&text[..at]);
                write(&mut started, c);
                out = Some(started);
            }
            (None, false) => {}
        }
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// A variation selector after `before` shapes nothing: there is no character before it, or
/// the one before is itself a selector or is shown as an escape. One selector after a
/// character changes how it looks (❤️, 葛󠄀) and stays; a run of them prints as nothing yet
/// can spell any text a byte at a time, to a model that reads it (tester 42 F3: 67 of them
/// behind an emoji carried "Ignore previous instructions …" in a tool's description).
fn shapes_nothing(before: Option<char>, escaped: impl Fn(char) -> bool) -> bool {
    before.is_none_or(|b| is_variation_selector(b) || escaped(b))
}

/// Serialised JSON with every character [`needs_escape`] marks (DEL, C1, bidi controls,
/// invisible characters: what serde_json leaves raw inside strings) written as a JSON `\u`
/// escape: the same value, safe on a terminal. Outside strings JSON holds only ASCII
/// punctuation and whitespace, and serde_json already escapes C0 inside them, so every
/// character changed is inside a string, where `\uXXXX` means the same character. What
/// every JSON this program writes passes: the CLI's `--json` and the MCP server's answers.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    JsonPlace::default().escape(json)
}

/// Where a walk through serialised JSON stands, for [`json_for_terminal`]: a variation
/// selector is judged by the value's character before it, not the JSON text's (a selector
/// opening a string follows the `"`, one after `\u0001` follows the `1`: both shape
/// nothing, as [`for_terminal`] reads them).
#[derive(Debug, Default, Clone, Copy)]
struct JsonPlace {
    in_string: bool,
    /// Characters of a `\` escape still to come: 1 after the backslash, 4 after `\u`.
    escape_left: u8,
    /// The value's character before, as it shows; `None` at a string's start and after an
    /// escape.
    shown_before: Option<char>,
}

impl JsonPlace {
    /// `json` (the next stretch of a JSON text) escaped; borrowed when nothing changes.
    fn escape<'t>(&mut self, json: &'t str) -> Cow<'t, str> {
        rewrite(json, |c| self.step(c), push_json_escape)
    }

    /// Take in `c`; whether it is to be written as an escape.
    fn step(&mut self, c: char) -> bool {
        if !self.in_string {
            self.in_string = c == '"';
            self.shown_before = None;
            // Outside strings JSON is ASCII; anything else is no JSON this program wrote,
            // and is escaped all the same.
            return needs_escape(c);
        }
        if self.escape_left > 0 {
            self.escape_left = if self.escape_left == 1 && c == 'u' {
                4
            } else {
                self.escape_left - 1
            };
            return needs_escape(c);
        }
        match c {
            '"' => {
                self.in_string = false;
                false
            }
            '\\' => {
                self.escape_left = 1;
                self.shown_before = None;
                false
            }
            c => {
                // `shown_before` holds only characters shown as themselves.
                let escaped = escaped_after(self.shown_before, c, needs_escape);
                self.shown_before = (!escaped).then_some(c);
                escaped
            }
        }
    }
}

/// [`json_for_terminal`] of an owned text: the same `String` back when nothing changes.
pub fn json_string_for_terminal(json: String) -> String {
    match json_for_terminal(&json) {
        Cow::Borrowed(_) => json,
        Cow::Owned(escaped) => escaped,
    }
}

/// At most the bytes `c` takes inside a JSON string once serialised and passed through
/// [`json_for_terminal`]: what a text's size is as an answer carries it (a DEL, one byte,
/// is the six of `\u007f`). Exact but for a variation selector, counted as escaped: it is
/// when it shapes nothing.
pub fn json_escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\t' | '\r' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 || needs_escape(c) || is_variation_selector(c) => 6 * c.len_utf16(),
        c => c.len_utf8(),
    }
}

/// Serialised JSON with every character outside printable ASCII written as a JSON `\u`
/// escape: the same value in bytes a terminal (or a log reader) shows as themselves.
pub fn ascii_json(json: &str) -> String {
    replace_where(json, |c| !(' '..='~').contains(&c), push_json_escape).into_owned()
}

/// JSON's `\u` takes four hex digits: a character beyond the Basic Multilingual Plane (a tag
/// character, U+E0041) is its UTF-16 surrogate pair, as serde_json writes one (tester 11
/// T11-14: `\ue0041` read back as U+E004 and a `1`).
fn push_json_escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        let _ = write!(out, "\\u{unit:04x}");
    }
}

/// [`json_for_terminal`] for JSON that arrives in pieces (an HTTP answer's frames): a
/// character split across two pieces is held until its rest comes. Bytes that are not UTF-8
/// pass as they are; they are nothing serde_json writes.
#[derive(Debug, Default)]
pub struct JsonPiecesForTerminal {
    /// The start of a character the last piece ended inside (at most 3 bytes).
    held: Vec<u8>,
    /// Where the JSON given so far stands: whether a variation selector opening the next
    /// piece shapes anything.
    place: JsonPlace,
}

impl JsonPiecesForTerminal {
    /// The next piece, escaped, less the opening of a character it ends inside.
    /// Borrowed when nothing in it changes, as most pieces are.
    pub fn piece<'b>(&mut self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        if self.held.is_empty()
            && let Ok(text) = std::str::from_utf8(bytes)
        {
            return match self.place.escape(text) {
                Cow::Borrowed(_) => Cow::Borrowed(bytes),
                Cow::Owned(escaped) => Cow::Owned(escaped.into_bytes()),
            };
        }
        let mut input = std::mem::take(&mut self.held);
        input.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            let (text, after) = match std::str::from_utf8(rest) {
                Ok(text) => (text, None),
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    (
                        std::str::from_utf8(good).unwrap_or_default(),
                        Some((bad, e.error_len())),
                    )
                }
            };
            out.extend_from_slice(self.place.escape(text).as_bytes());
            match after {
                None => break,
                Some((bad, Some(invalid))) => {
                    let (raw, next) = bad.split_at(invalid);
                    out.extend_from_slice(raw);
                    self.place.shown_before = None;
                    rest = next;
                }
                Some((unfinished, None)) => {
                    self.held = unfinished.to_vec();
                    break;
                }
            }
        }
        Cow::Owned(out)
    }

    /// What the last piece ended inside, as it was: the end of the JSON came, and these
    /// bytes are no character.
    pub fn finish(self) -> Vec<u8> {
        self.held
    }
}

/// As [`for_terminal`], for the operator's own text in the console's Prompt box, which is
/// also what is sent: the zero-width joiner and non-joiner stay as written. They join the
/// parts of an emoji (👩‍👩‍👧) and are spelling in Persian and the Indic scripts (می‌خواهم),
/// and act on no terminal; escaped, they were sent as the text `\u{200d}` (tester 22 F1).
/// So do the directional marks (LRM, RLM, ALM): punctuation of Hebrew and Arabic text, they
/// only set the direction of the neutral characters beside them — no embedding, override
/// or isolate, nothing Trojan Source uses, and not among the characters rustc's
/// `text_direction_codepoint_in_literal` refuses; escaped, `שלום\u{200f}` was sent
/// (tester 34 F5). Every other control, bidi and invisible character is shown — and so
/// sent — as its escape: a hidden tag-character message or a Trojan Source override in a
/// paste is seen and defused.
pub fn for_prompt_box(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| {
        needs_escape(c) && !is_joiner(c) && !is_directional_mark(c)
    })
}

/// As [`for_prompt_box`], for a name that goes on one line of what is sent (an
/// attachment's name in its header line): line breaks and tabs escaped too. A right-to-left
/// mark in a Hebrew file name reaches the model as the mark, as in the instruction (tester 35
/// F12: it was sent as the text `\u{200f}`).
pub fn for_prompt_line(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| {
        (needs_escape(c) && !is_joiner(c) && !is_directional_mark(c)) || matches!(c, '\n' | '\t')
    })
}

/// The zero-width non-joiner and joiner (U+200C, U+200D).
fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

/// The left-to-right, right-to-left and Arabic letter marks (U+200E, U+200F, U+061C).
fn is_directional_mark(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// As [`for_terminal`], for text shown on one line: `\n` and `\t` are escaped too.
pub fn for_terminal_line(text: &str) -> Cow<'_, str> {
    escape_where(text, escaped_on_one_line)
}

fn escaped_on_one_line(c: char) -> bool {
    needs_escape(c) || matches!(c, '\n' | '\t')
}

/// Most characters of outside text a message quotes.
pub const QUOTE_CHARS: usize = 80;

/// Text from a file, a server or a user as a message quotes it, in single quotes: on one line
/// with every control, bidi and invisible character escaped ([`for_terminal_line`]), at most
/// [`QUOTE_CHARS`] characters of it. A longer text reads `'its opening…' (N more bytes)`, N
/// the bytes of the text left out. The one way an error quotes such text: a 100,000-character
/// key is named, not echoed.
pub fn quoted(text: &str) -> String {
    quoted_with(text, '\'')
}

/// As [`quoted`], between `mark`s (`"` where the message's own convention is double quotes).
pub fn quoted_with(text: &str, mark: char) -> String {
    let mark = mark.to_string();
    quoted_between(text, &mark, 0)
}

/// A JSON value from a file as an error quotes it: a string as [`quoted_with`] `"`, anything
/// else as its JSON text, cut the same way (tester 24 N3: a 50 MB `spend` string was echoed
/// whole on stderr and into the log).
pub fn quoted_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => quoted_with(s, '"'),
        other => quoted_between(&other.to_string(), "", 0),
    }
}

fn quoted_between(text: &str, mark: &str, left_out: usize) -> String {
    quoted_chars(text.char_indices(), text.len(), mark, left_out)
}

/// The characters of a text, each with the offset of its first byte in the text as it came,
/// quoted: `length` is the bytes it came as, so `(N more bytes)` counts those, not the bytes
/// of a U+FFFD standing for an invalid one.
fn quoted_chars(
    chars: impl Iterator<Item = (usize, char)>,
    length: usize,
    mark: &str,
    left_out: usize,
) -> String {
    let mut shown = String::new();
    let mut count = 0;
    let mut before = None;
    for (at, c) in chars {
        let mut piece = String::new();
        // A combining mark first would fuse onto the opening mark (tester 25 F6: `'́abc'`).
        if at == 0 && unicode_normalization::char::is_combining_mark(c) {
            push_escape(&mut piece, c);
        } else if !mark.is_empty() && (mark.starts_with(c) || c == '\\') {
            // A mark in the text never closes the quotation, as JSON and TOML write `"`
            // (tester 26 N5: a redirect's Location `…/a"b` did; a caller `o'brien` read
            // `'o'brien'`); a backslash is doubled so an escape reads as one.
            piece.push('\\');
            piece.push(c);
        } else if escaped_after(before, c, escaped_on_one_line) {
            push_escape(&mut piece, c);
        } else {
            piece.push(c);
        }
        before = Some(c);
        let n = piece.chars().count();
        if count + n > QUOTE_CHARS {
            return format!(
                "{mark}{shown}…{mark} ({} more bytes)",
                length - at + left_out
            );
        }
        shown.push_str(&piece);
        count += n;
    }
    if left_out > 0 {
        return format!("{mark}{shown}…{mark} ({left_out} more bytes)");
    }
    format!("{mark}{shown}{mark}")
}

/// As [`quoted_with`], for a text of which only the opening `kept` was kept, `left_out`
/// bytes more not: cut as the whole text would be, the bytes left out counted in its
/// `(N more bytes)` (a line too long to keep whole, read as it passes). `kept` may be any
/// bytes: each invalid sequence reads as U+FFFD (as `String::from_utf8_lossy` makes it) but
/// counts, when left out, as the bytes it is (review 49 N2: each counted as U+FFFD's three).
pub fn quoted_opening(kept: &[u8], left_out: usize, mark: char) -> String {
    let chars = kept
        .utf8_chunks()
        .scan(0, |offset, chunk| {
            let start = *offset;
            *offset += chunk.valid().len() + chunk.invalid().len();
            Some((start, chunk))
        })
        .flat_map(|(start, chunk)| {
            let valid = chunk.valid();
            let invalid = (!chunk.invalid().is_empty())
                .then_some((start + valid.len(), char::REPLACEMENT_CHARACTER));
            valid
                .char_indices()
                .map(move |(at, c)| (start + at, c))
                .chain(invalid)
        });
    quoted_chars(chars, kept.len(), &mark.to_string(), left_out)
}

/// A name from outside (a tool a model or an imported baseline named, a baseline's model or
/// plan id) as a line of text puts it: as written when it is one plain line of at most
/// [`QUOTE_CHARS`] characters (nothing [`for_terminal_line`] would change), else [`quoted`]
/// — so a line break in a name never starts a line of its own, and an 8 MiB name is named,
/// not echoed. The one way a sentence or a list of names shows a name.
pub fn name(text: &str) -> Cow<'_, str> {
    if is_one_plain_line(text) && text.chars().count() <= QUOTE_CHARS {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(quoted(text))
    }
}

/// Catalog names as lists of them print them: each as [`name`] shows it, unless it prints like
/// another of the same catalog (`caf\u{e9}` and `cafe\u{301}`, `\u{212a}elvin` and `Kelvin`),
/// then spelled out so the two read apart ([`crate::core::text::told_apart`]; tester 35 F5:
/// `compact` spelled them apart while `preview`'s lists and the console's Catalog pane read
/// `café, café`). One reader for every list of a catalog's names, worked out once per
/// catalog (`PreparedCatalog::names_shown`), not per list or per frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamesShown {
    /// The names that print like another, each spelled out: none in most catalogs.
    spelled: std::collections::HashMap<String, String>,
}

impl NamesShown {
    /// For the names of one catalog (each entry's).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let spelled = crate::core::text::told_apart(names)
            .into_iter()
            .filter_map(|(id, shown)| match shown {
                Cow::Owned(spelled) => Some((id.to_string(), spelled)),
                Cow::Borrowed(_) => None,
            })
            .collect();
        NamesShown { spelled }
    }

    /// `n` spelled out when it prints like another of the names, else as written — for a
    /// cell or line that escapes outside text itself (a table, a pane's line).
    pub fn spelled_or_raw<'b>(&self, n: &'b str) -> Cow<'b, str> {
        match self.spelled.get(n) {
            Some(spelled) => Cow::Owned(spelled.clone()),
            None => Cow::Borrowed(n),
        }
    }

    /// `n` as a list of this catalog's names shows it. A spelled-out name is printable ASCII
    /// already; any other is named as outside text is.
    pub fn name<'b>(&self, n: &'b str) -> Cow<'b, str> {
        match self.spelled_or_raw(n) {
            Cow::Borrowed(raw) => name(raw),
            spelled => spelled,
        }
    }
}

/// A path (a file the operator named, a model directory) as a line of text puts it: as
/// written when nothing in it needs escaping, however long; else [`quoted`], so a line break
/// in a file name never starts a line of its own (tester F1: `lab\nFAKE.jsonl against …`).
pub fn path(path: &std::path::Path) -> Cow<'_, str> {
    match path.to_string_lossy() {
        Cow::Borrowed(text) => plain_or_quoted(text),
        Cow::Owned(text) => Cow::Owned(plain_or_quoted(&text).into_owned()),
    }
}

/// [`path`] as a method: `file.shown()` where a message names a file. The one way a path
/// reaches text (`Path::display` keeps a line feed in a file name; tests/output_lines.rs
/// checks that no source file outside tests calls it).
pub trait ShownPath {
    fn shown(&self) -> Cow<'_, str>;
}

impl ShownPath for std::path::Path {
    fn shown(&self) -> Cow<'_, str> {
        path(self)
    }
}

/// Text from outside that names a thing and may be long (a path, an embedder spec) as a line
/// puts it: as written when nothing in it needs escaping, else [`quoted`].
pub fn plain_or_quoted(text: &str) -> Cow<'_, str> {
    if is_one_plain_line(text) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(quoted(text))
    }
}

/// Nothing in `text` that [`for_terminal_line`] would change, and no combining mark first
/// (printed bare, it fuses onto the character before it: tester 26 N7, a path `́plans.jsonl`
/// read as `imported ́plans.jsonl`).
fn is_one_plain_line(text: &str) -> bool {
    matches!(for_terminal_line(text), Cow::Borrowed(_))
        // A backslash is quoted (and doubled) so it never reads as an escape (tester 32
        // F2: a name `tab\tname` beside an escaped tab).
        && !text.contains('\\')
        // A space at either end would print unseen (tester 30 F4: `dup ` read as `dup`).
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && !text
            .chars()
            .next()
            .is_some_and(unicode_normalization::char::is_combining_mark)
}

/// Text from outside (an intent) as the one line a header gives it: [`for_terminal_line`],
/// then cut to `width` characters with `…`.
pub fn one_line(text: &str, width: usize) -> String {
    crate::core::text::clip(&for_terminal_line(text), width)
}

/// What an endpoint or a model sent (an error body, a reply that is not an answer, a
/// failure's quote of the answer) as a message quotes it: trimmed, at most `width` columns,
/// on one line with every control, bidi and invisible character escaped — so a server
/// cannot start a line that passes for one of ctxconsole's (tester F2: `not json\nFAKE:
/// line` on stderr; tester 31 F2: a `no_plan` detail kept the answer's line feeds). The one
/// way a reply is quoted: the chat client, the embeddings endpoint and the failure reader.
pub fn quote_reply(text: &str, width: usize) -> String {
    one_line(text.trim(), width)
}

/// The most characters a line of a section of one plan shows before it is cut, in the
/// console's plan view and in `history show`.
pub const SECTION_LINE_CHARS: usize = 400;

/// A section of one plan shown (its raw response, its answer as kept) from its `text`
/// lines, escaped: at most `limit` lines, each cut to `line_chars` characters with `…`, and
/// when anything was left out, one line saying how much — lines and bytes — and where it is
/// whole: `field` of `ctxconsole history show ID --json`. Every cut section says so alike,
/// in the console and in `history show` (tester 22 F5: 200 KB of tool-call arguments ended
/// in a bare `…` in the console; tester 34 F10: in `history show`).
pub fn cut_section<'t>(
    text: impl IntoIterator<Item = &'t str>,
    limit: usize,
    line_chars: usize,
    id: &str,
    field: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let (mut lines_left, mut bytes_left) = (0usize, 0usize);
    for (i, l) in text.into_iter().enumerate() {
        if i >= limit {
            lines_left += 1;
            // The line and the break before it.
            bytes_left += l.len() + 1;
            continue;
        }
        out.push(match l.char_indices().nth(line_chars) {
            Some((at, _)) => {
                bytes_left += l.len() - at;
                format!("{}…", for_terminal_line(&l[..at]))
            }
            None => for_terminal_line(l).into_owned(),
        });
    }
    if bytes_left > 0 {
        let thousands = crate::core::text::thousands;
        let what = if lines_left > 0 {
            format!(
                "{} more {} ({} bytes)",
                thousands(lines_left),
                if lines_left == 1 { "line" } else { "lines" },
                thousands(bytes_left)
            )
        } else {
            format!("{} more bytes", thousands(bytes_left))
        };
        out.push(
            for_terminal_line(&format!(
                "… {what}: ctxconsole history show {id} --json ({field})"
            ))
            .into_owned(),
        );
    }
    out
}

/// Text from outside that may run over several lines by design (an intent pasted whole),
/// under a label of ctxconsole's own (`intent: `): every line after the first indented by
/// `indent` spaces, so none of them can pass for a line of ctxconsole's; escaped as
/// [`for_terminal`] (a CR is shown, not obeyed).
pub fn indented(text: &str, indent: usize) -> String {
    let pad = format!("\n{}", " ".repeat(indent));
    for_terminal(text).replace('\n', &pad)
}

/// A key from a file as one segment of a dotted field name (`roles.accent`,
/// `categories.NAME`): as written when it is a short bare key, else [`quoted_with`] `"`.
pub fn key_segment(key: &str) -> Cow<'_, str> {
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-');
    if !key.is_empty() && key.len() <= QUOTE_CHARS && key.chars().all(bare) {
        Cow::Borrowed(key)
    } else {
        Cow::Owned(quoted_with(key, '"'))
    }
}

/// True for what a terminal would act on or what could disguise the text around it.
pub fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true, // C0, DEL and C1 (general category Cc)
        c => is_bidi_control(c) || is_invisible(c),
    }
}

/// Characters that show as nothing yet are there: Unicode's default-ignorable code points
/// ([`crate::core::text::is_default_ignorable`]: zero-width space and joiners, word joiner and invisible
/// operators, the byte-order mark, a soft hyphen, Hangul fillers, tag characters — which
/// can carry a hidden message to a model —, …) but for the variation selectors, which
/// change how the character before them looks (❤️), and the line and paragraph separators
/// some viewers break a line at. Two names that differ only by one look alike.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
        || (crate::core::text::prints_as_nothing(c) && !is_variation_selector(c))
}

fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' | '\u{180B}'..='\u{180D}' | '\u{180F}')
}

/// Every bidi formatting character: embeddings and overrides (U+202A–U+202E), isolates
/// (U+2066–U+2069) and the marks (LRM U+200E, RLM U+200F, ALM U+061C). Invisible, they
/// reorder or flip what follows ("Trojan Source").
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

fn push_escape(out: &mut String, c: char) {
    let _ = match c {
        '\n' => out.write_str("\\n"),
        '\t' => out.write_str("\\t"),
        '\r' => out.write_str("\\r"),
        c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    };
}

#[cfg(test)]
mod tests {
    use super::{json_for_terminal, needs_escape};
    use std::borrow::Cow;

    #[test]
    fn json_escaping_parses_back_to_the_same_value() {
        let original = serde_json::json!({
            "s": "\x1b]0;pwned\x07 \u{9b}31m \u{202e}txt \x7f ok ✓ שלום",
            "k\u{85}": ["\u{2066}", 1, null]
        });
        let text = serde_json::to_string_pretty(&original).unwrap();
        let safe = json_for_terminal(&text);
        assert!(!safe.contains(needs_escape), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, original);
        assert!(safe.contains("\\u009b31m"), "{safe}");
    }

    /// Tester 11 T11-14: invisible characters beyond the BMP (tag characters, musical
    /// formatting, shorthand controls) were written `\ue0041`, five digits, which JSON reads
    /// as U+E004 and a `1`: `history export` → `import plans` changed the stored intent.
    #[test]
    fn characters_beyond_the_bmp_parse_back_as_themselves() {
        let original = serde_json::json!({
            "intent": "note \u{E0041}\u{E0042} x\u{1D173}y \u{1BCA0} \u{E0001} \u{2066}iso\u{2069} 😀"
        });
        let text = serde_json::to_string(&original).unwrap();
        let safe = json_for_terminal(&text);
        assert!(!safe.contains(needs_escape), "{safe}");
        assert!(safe.contains("\\udb40\\udc41"), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn plain_json_is_borrowed() {
        let text = "{\n  \"a\": \"b\\u001b\"\n}";
        assert!(matches!(json_for_terminal(text), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escaped_len_is_what_serialising_and_escaping_gives() {
        for c in [
            'a',
            'é',
            '😀',
            '"',
            '\\',
            '\n',
            '\u{1}',
            '\u{7f}',
            '\u{9b}',
            '\u{202e}',
            '\u{e0041}',
            '\t',
            '\r',
            '\u{8}',
            '\u{c}',
            '\u{1f}',
            '\u{85}',
            '\u{fe0f}',
            '\u{e0100}',
        ] {
            let text = serde_json::to_string(&c.to_string()).unwrap();
            let escaped = super::json_for_terminal(&text);
            assert_eq!(
                super::json_escaped_len(c),
                escaped.len() - 2,
                "U+{:04X}",
                c as u32
            );
        }
    }

    /// Tester 42 F3: a run of variation selectors prints as nothing and can spell a hidden
    /// message; one after a character it shapes stays as written.
    #[test]
    fn a_run_of_variation_selectors_is_escaped_and_one_after_its_character_kept() {
        assert_eq!(
            super::for_terminal("\u{2764}\u{fe0f} ok"),
            "\u{2764}\u{fe0f} ok"
        );
        assert_eq!(
            super::for_terminal("\u{1f600}\u{fe00}\u{e0100}\u{fe01} x"),
            "\u{1f600}\u{fe00}\\u{e0100}\\u{fe01} x"
        );
        assert_eq!(super::for_terminal("\u{fe0f}a"), "\\u{fe0f}a");
        assert_eq!(super::for_terminal("\u{1b}\u{fe0f}"), "\\x1b\\u{fe0f}");
        // JSON judges a selector by the value's character before it, not the JSON text's
        // (review 42 M1): one opening a string or after an escaped control shapes nothing.
        for (value, raw_kept) in [
            ("\u{fe0f}x", false),
            ("\u{1}\u{e0100}", false),
            ("a\\\u{fe0f}", false),
            ("\u{2764}\u{fe0f}", true),
            ("1\u{fe0f}\u{20e3}", true),
        ] {
            let json = serde_json::json!({ value: value }).to_string();
            let escaped = super::json_for_terminal(&json);
            assert_eq!(
                escaped.contains(super::is_variation_selector),
                raw_kept,
                "{escaped}"
            );
            let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
            assert_eq!(back[value], value);
        }
        // A quotation and a plain name read a selector as the line does (review 42 M2).
        assert_eq!(super::quoted("\u{2764}\u{fe0f}"), "'\u{2764}\u{fe0f}'");
        assert_eq!(super::quoted("ok\u{fe0f}\u{fe0f}"), "'ok\u{fe0f}\\u{fe0f}'");
        assert_eq!(super::name("ok\u{fe0f}\u{fe0f}"), "'ok\u{fe0f}\\u{fe0f}'");
        let value = serde_json::json!({"d": "Sends an email \u{1f600}\u{fe01}\u{e0143}\u{e0144}"});
        let text = super::json_for_terminal(&value.to_string()).into_owned();
        assert!(
            text.contains("\u{1f600}\u{fe01}\\udb40\\udd43\\udb40\\udd44"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn ascii_json_is_the_same_value_in_printable_ascii() {
        let value = serde_json::json!({"t": "bom \u{feff} rtl \u{202e} del \u{7f} 😀 é\ttab"});
        let text = super::ascii_json(&value.to_string());
        assert!(text.bytes().all(|b| (b' '..=b'~').contains(&b)), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    /// An HTTP answer's frames may end inside a character: cut at every byte, the pieces
    /// escaped one by one give what the whole gives, and nothing raw.
    #[test]
    fn json_in_pieces_is_escaped_as_the_whole_is_wherever_it_is_cut() {
        let value =
            serde_json::json!({"t": "a\u{202e}b \u{9b}31m \u{e0041} é 😀\u{fe0f}\u{fe0f} \u{7f}"});
        let text = format!("data: {value}\n\n");
        let whole = super::json_for_terminal(&text).into_owned();
        assert!(!whole.contains(super::needs_escape), "{whole}");
        for cut in 0..=text.len() {
            let mut pieces = super::JsonPiecesForTerminal::default();
            let mut out = pieces.piece(&text.as_bytes()[..cut]).into_owned();
            out.extend_from_slice(&pieces.piece(&text.as_bytes()[cut..]));
            assert_eq!(String::from_utf8(out).unwrap(), whole, "cut at {cut}");
        }
        // A piece with nothing to change is given back as it is, not copied (tester 42 F5).
        let mut pieces = super::JsonPiecesForTerminal::default();
        assert!(matches!(
            pieces.piece(b"data: {\"a\":\"\xc3\xa9\"}"),
            Cow::Borrowed(_)
        ));
        // Bytes that are no UTF-8 pass as they are, and what follows them is escaped.
        let mut pieces = super::JsonPiecesForTerminal::default();
        assert_eq!(
            pieces.piece(b"\"\xff\xe2\x80\xae\"").into_owned(),
            b"\"\xff\\u202e\"".to_vec()
        );
    }

    /// Tester 25 F6: a value opening with a combining mark printed it raw, fused onto the
    /// quote; one inside a word (decomposed `café`) is text and stays as written.
    #[test]
    fn a_quoted_value_opening_with_a_combining_mark_shows_it_escaped() {
        assert_eq!(super::quoted("\u{301}abc"), "'\\u{301}abc'");
        assert_eq!(super::quoted("cafe\u{301}"), "'cafe\u{301}'");
    }

    /// Tester 26 N7: a name or a path opening with a combining mark was printed bare, fused
    /// onto the space before it. Quoted, with the mark escaped; a mark on a base character
    /// is plain text.
    #[test]
    fn a_name_or_path_opening_with_a_combining_mark_is_quoted() {
        assert_eq!(super::name("\u{301}plans"), "'\\u{301}plans'");
        let path = std::path::Path::new("\u{e47}plans.jsonl");
        assert_eq!(super::path(path), "'\\u{e47}plans.jsonl'");
        assert_eq!(super::name("cafe\u{301}"), "cafe\u{301}");
    }

    use super::*;

    #[test]
    fn the_prompt_box_keeps_joiners_and_escapes_the_rest() {
        let family = "plan a family trip \u{1f469}\u{200d}\u{1f469}\u{200d}\u{1f467} to Lisbon";
        assert_eq!(for_prompt_box(family), family);
        let persian = "translate: \u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645}";
        assert_eq!(for_prompt_box(persian), persian);
        assert_eq!(
            for_prompt_box("a\u{202e}b\x1b[31mc\u{200b}d\u{e0041}e"),
            "a\\u{202e}b\\x1b[31mc\\u{200b}d\\u{e0041}e"
        );
        // Outside the box a joiner is still shown, as outside text is.
        assert_eq!(for_terminal("a\u{200d}b"), "a\\u{200d}b");
        // The directional marks of Hebrew and Arabic text stay as written (tester 34 F5);
        // the embeddings, overrides and isolates beside them do not.
        let hebrew =
            "find flights \u{200f}\u{5e9}\u{5dc}\u{5d5}\u{5dd}\u{200f} and \u{200e}x \u{61c}";
        assert_eq!(for_prompt_box(hebrew), hebrew);
        assert_eq!(
            for_prompt_box("\u{200f}a\u{2067}b\u{2069}\u{202b}c"),
            "\u{200f}a\\u{2067}b\\u{2069}\\u{202b}c"
        );
        assert_eq!(for_terminal("a\u{200f}b"), "a\\u{200f}b");
        // On one line of what is sent: the marks kept, line breaks and overrides not.
        assert_eq!(
            for_prompt_line("\u{5e9}\u{200f}.txt\nX\t\u{202e}"),
            "\u{5e9}\u{200f}.txt\\nX\\t\\u{202e}"
        );
    }

    #[test]
    fn a_quote_is_bounded_escaped_and_says_what_it_left_out() {
        assert_eq!(quoted("plaid"), "'plaid'");
        assert_eq!(quoted("a\x1b[2J\nb"), "'a\\x1b[2J\\nb'");
        let long = "k".repeat(100_000);
        assert_eq!(
            quoted(&long),
            format!("'{}…' (99920 more bytes)", "k".repeat(QUOTE_CHARS))
        );
        // Escapes count as what is shown; a cut never splits a character.
        let q = quoted(&"é\x07".repeat(100));
        assert!(q.chars().count() < QUOTE_CHARS + 40, "{q}");
        assert!(q.ends_with("more bytes)"), "{q}");
        assert_eq!(quoted_with("x", '"'), "\"x\"");
        assert_eq!(
            quoted_with("http://h/a\"b\\c", '"'),
            "\"http://h/a\\\"b\\\\c\""
        );
        // Between single quotes alike: `o'brien` never reads as `'o'` and more, and a
        // backslash in the text is told from an escape.
        assert_eq!(quoted("o'brien"), "'o\\'brien'");
        assert_eq!(quoted("a\\x1b"), "'a\\\\x1b'");
        assert_ne!(quoted("a\\x1b"), quoted("a\x1b"));
    }

    /// Review 49 N2: bytes that are not UTF-8 read as U+FFFD and count as the bytes they are.
    #[test]
    fn an_opening_of_invalid_bytes_counts_the_bytes_left_out() {
        // 100 invalid bytes: 80 shown as U+FFFD, 20 left out (not 60, U+FFFD's bytes).
        assert_eq!(
            quoted_opening(&[0xff; 100], 0, '"'),
            format!("\"{}…\" (20 more bytes)", "\u{fffd}".repeat(QUOTE_CHARS))
        );
        let mut mixed = "é".repeat(QUOTE_CHARS).into_bytes();
        mixed.extend_from_slice(b"\xC3\xffok");
        assert_eq!(
            quoted_opening(&mixed, 5, '\''),
            format!("'{}…' (9 more bytes)", "é".repeat(QUOTE_CHARS))
        );
        assert_eq!(quoted_opening(b"a\xC3b", 0, '"'), "\"a\u{fffd}b\"");
        assert_eq!(quoted_opening(b"ab", 7, '"'), "\"ab…\" (7 more bytes)");
    }

    #[test]
    fn a_name_is_one_line_as_written_or_quoted() {
        assert!(matches!(name("web.search"), Cow::Borrowed("web.search")));
        assert_eq!(name("dup "), "'dup '");
        assert_eq!(name("tab\\tname"), "'tab\\\\tname'");
        assert_ne!(name("tab\\tname"), name("tab\tname"));
        assert_eq!(name(" dup"), "' dup'");
        assert_eq!(name("a b/c:free"), "a b/c:free");
        assert_eq!(
            name("zz\n  vs baseline: agree"),
            "'zz\\n  vs baseline: agree'"
        );
        assert_eq!(name("t\tx\x1b"), "'t\\tx\\x1b'");
        let long = "t".repeat(8 << 20);
        let shown = name(&long);
        assert!(
            shown.len() < 200 && shown.ends_with("more bytes)"),
            "{shown}"
        );
        assert_eq!(name(&"n".repeat(QUOTE_CHARS)), "n".repeat(QUOTE_CHARS));
    }

    #[test]
    fn a_path_is_one_line_as_written_or_quoted() {
        let long = format!("/data/{}/labels.jsonl", "d".repeat(200));
        assert_eq!(path(std::path::Path::new(&long)), long);
        assert!(matches!(
            path(std::path::Path::new("/tmp/l.jsonl")),
            Cow::Borrowed("/tmp/l.jsonl")
        ));
        assert_eq!(
            path(std::path::Path::new("lab\x1b[31m\nFAKE.jsonl")),
            "'lab\\x1b[31m\\nFAKE.jsonl'"
        );
    }

    #[test]
    fn indented_text_keeps_its_lines_under_its_label() {
        assert_eq!(indented("one", 8), "one");
        assert_eq!(
            indented("remember\noutcome: ok\r\n\x1b[2J", 4),
            "remember\n    outcome: ok\\r\n    \\x1b[2J"
        );
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in [
            "",
            "plain",
            "two\nlines\tand a tab",
            "ünïcødé → ✓ 日本語",
            "a\\x1b b",
        ] {
            assert!(
                matches!(for_terminal(s), Cow::Borrowed(t) if t == s),
                "{s:?}"
            );
        }
    }

    #[test]
    fn escapes_and_osc_sequences_become_visible() {
        assert_eq!(for_terminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(for_terminal("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(
            for_terminal("\x1b]52;c;SGVsbG8=\x07"),
            "\\x1b]52;c;SGVsbG8=\\x07"
        );
        assert_eq!(for_terminal("\u{9b}31m red"), "\\u{9b}31m red");
        assert_eq!(
            for_terminal("del\x7f nul\0 cr\r"),
            "del\\x7f nul\\x00 cr\\r"
        );
        assert_eq!(for_terminal("x\u{85}y"), "x\\u{85}y");
    }

    #[test]
    fn bidi_marks_are_shown_too() {
        assert_eq!(
            for_terminal("a\u{200F}b\u{200E}c\u{061C}d"),
            "a\\u{200f}b\\u{200e}c\\u{61c}d"
        );
    }

    #[test]
    fn invisible_characters_are_shown_too() {
        assert_eq!(
            for_terminal("local/x\u{200B}\u{FEFF}a\u{2028}b\u{2060}"),
            "local/x\\u{200b}\\u{feff}a\\u{2028}b\\u{2060}"
        );
        assert_eq!(
            crate::core::budget::model_id_problem("local/x\u{200B}"),
            Some("holds a control, bidi or invisible character")
        );
        // Tester 10 T10-11: a Hangul filler and tag characters (hidden text for a model)
        // printed as nothing; a variation selector still shapes the heart before it.
        assert_eq!(
            for_terminal("x\u{3164}y\u{E0001}\u{E0041}z\u{115F}"),
            "x\\u{3164}y\\u{e0001}\\u{e0041}z\\u{115f}"
        );
        assert_eq!(for_terminal("\u{2764}\u{FE0F}"), "\u{2764}\u{FE0F}");
        for c in [
            '\u{180E}',
            '\u{2061}',
            '\u{2064}',
            '\u{034F}',
            '\u{115F}',
            '\u{1160}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{E0001}',
            '\u{E0020}',
            '\u{FE0F}',
            '\u{1D173}',
            '\u{17B4}',
            '\u{200E}',
            '\u{061C}',
        ] {
            let name = format!("x{c}y");
            assert_eq!(crate::core::text::printed_alike(&name), "xy", "{c:?}");
        }
    }

    #[test]
    fn bidi_overrides_are_shown() {
        assert_eq!(
            for_terminal("abc\u{202E}fdp.exe\u{202C}"),
            "abc\\u{202e}fdp.exe\\u{202c}"
        );
        assert_eq!(for_terminal("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        // Ordinary right-to-left text is left alone.
        assert_eq!(for_terminal("שלום"), "שלום");
    }

    #[test]
    fn newlines_and_tabs_kept_or_escaped_for_one_line() {
        assert_eq!(for_terminal("a\nb\tc"), "a\nb\tc");
        assert_eq!(for_terminal_line("a\nb\tc\x1b"), "a\\nb\\tc\\x1b");
        assert!(matches!(for_terminal_line("one line"), Cow::Borrowed(_)));
    }

    #[test]
    fn nothing_a_terminal_acts_on_survives_any_input() {
        // Every code point a terminal might act on, in every position.
        let mut all = String::new();
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            all.push(c);
            all.push('x');
        }
        for out in [for_terminal(&all), for_terminal_line(&all)] {
            assert!(
                !out.chars()
                    .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)),
            );
        }
        assert!(!for_terminal_line(&all).contains(['\n', '\t']));
    }
}
