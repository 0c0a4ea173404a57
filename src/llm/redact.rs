//! Keeping the provider key out of everything received. Some endpoints echo the
//! `Authorization` header back (in a 401 body, a 200 body, a stream event, an error message);
//! whatever they send is shown, logged and stored, so the key is taken out of it first.
//!
//! The rule: every run of received bytes covered by windows of [`FRAGMENT`] bytes (or of
//! the whole key, when it is shorter) that also occur in the key becomes one [`MARKER`].
//! That takes out the key itself, `Bearer <key>` (the marker stands after `Bearer `), and
//! any echoed piece of the key at least [`FRAGMENT`] bytes long — a truncated echo such as
//! the first 20 characters. Shorter pieces are left: 11 characters of a key are not the key,
//! and the public prefixes keys share (`sk-or-v1-`, `sk-proj-`) stay readable.
//!
//! The key's base64 forms count as the key too (an echoed `Basic` header, a JSON field that
//! carries the header encoded): the encoding of the key at each of the three byte
//! alignments it can have inside a longer encoded text, standard and URL-safe, less the
//! characters at either end that depend on its neighbours. So does the key written as hex,
//! lower or upper case.
//!
//! A stream is redacted chunk by chunk ([`StreamRedactor`]): the end of a chunk that could
//! begin a window of the key (at most `window − 1` bytes) is held back until the next chunk
//! shows whether it does, so a key split across two chunks is still found, and a run
//! crossing chunks still gives one marker. Nothing else is held: a chunk ending in a newline
//! (as every server-sent event does) is given out whole, since no key holds one.

use std::collections::HashSet;
use std::ops::Range;

/// What a redacted run becomes.
pub const MARKER: &str = "[REDACTED]";

/// The shortest piece of the key that is redacted on its own.
pub const FRAGMENT: usize = 12;

/// The shortest piece of the key a marker takes beside it in decoded text. A marker cannot
/// tell the redactor's own `[REDACTED]` from one a model wrote, and most one- to three-letter
/// runs occur somewhere in a long random key, so shorter pieces would eat the letters of a
/// word glued to a model's own `[REDACTED]` (tester 9 T9-1: `[REDACTED]stuff` became
/// `[REDACTED]ff`); at most 3 bytes of the key stay beside a marker.
const EDGE_MIN: usize = 4;

// A window is packed into a `u128`.
const _: () = assert!(FRAGMENT <= 16);

/// The longest value that is taken for a placeholder when it has no digit.
const PLACEHOLDER_WORDS_MAX: usize = 23;

/// The shortest value taken for a secret.
pub const SECRET_MIN: usize = 8;

/// Why a key variable's value is a placeholder rather than a secret, if it is: shorter than
/// [`SECRET_MIN`] bytes, or letters and separators alone (no digit) under 24 bytes — the
/// stand-ins keyless local servers are given (`ollama`, `EMPTY`, `lm-studio`,
/// `sk-no-key-required`, `x`). Such a value is sent as the key but never redacted, looked
/// for in a request or scrubbed: as a secret it matched ordinary text, so `ollama/llama3.2`
/// was kept as `[REDACTED]/llama3.2` and replayed to another provider, and `x` took every
/// letter x out of the history (tester 21 F1). A real provider key is longer and has digits.
pub fn placeholder(key: &str) -> Option<&'static str> {
    let key = key.trim();
    if key.len() < SECRET_MIN {
        return Some("too short to be a secret");
    }
    let words = key
        .chars()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, '-' | '_' | '.' | ' '));
    (words && key.len() <= PLACEHOLDER_WORDS_MAX).then_some("letters alone, a placeholder's shape")
}

/// The key's windows, built once per call from the key in hand.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Window length: [`FRAGMENT`], or the key's length when it is shorter; 0 without a key.
    window: usize,
    /// Every `window`-byte slice of the key, packed big-endian into an integer, sorted.
    windows: Vec<u128>,
    /// One bit per hash of a window: most positions of a text are ruled out by one load.
    filter: Vec<u64>,
    /// `starts[j]`: the first `j` bytes of every window, packed (`j` < `window`).
    starts: Vec<HashSet<u128>>,
    /// The key past its public prefix, and its base64 forms: the pieces shorter than a
    /// window that touch a marker in decoded text are looked for here ([`Redactor::text`]).
    edge_forms: Vec<Vec<u8>>,
    /// The key's public prefix (`sk-proj-`, `sk-or-v1-`; [`public_prefix_len`]).
    public: Vec<u8>,
}

/// How long the key's public prefix is: its leading segments, each ended by `-` or `_`, of at
/// most 6 lowercase letters and digits (`sk-`, `proj-`, `or-`, `v1-`, `ant-`, `api03-`,
/// `github_`, `pat_`), up to four of them. Every key of a provider shares it, so a model
/// writes it beside its own `[REDACTED]` (`OPENAI_API_KEY=sk-proj-[REDACTED]`, tester 10
/// T10-2): a marker never takes it.
fn public_prefix_len(key: &[u8]) -> usize {
    let mut len = 0;
    for _ in 0..4 {
        let rest = &key[len..];
        let Some(sep) = rest.iter().position(|&b| b == b'-' || b == b'_') else {
            break;
        };
        let segment = &rest[..sep];
        if segment.is_empty()
            || segment.len() > 6
            || !segment
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            break;
        }
        len += sep + 1;
    }
    len
}

/// Bits in [`Redactor::filter`]: 2^16, 8 KiB, for at most a few hundred windows.
const FILTER_BITS: u32 = 16;

/// The key written as hex, lower and upper case (tester 26 N4: an endpoint echoing
/// `key=<hex of the key>` was shown, logged and stored whole).
fn hex_forms(key: &[u8]) -> [Vec<u8>; 2] {
    let lower: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let upper = lower.to_ascii_uppercase();
    [lower.into_bytes(), upper.into_bytes()]
}

/// The key as it reads inside base64 text: for each alignment (0, 1 or 2 bytes before it
/// in the encoded input), the characters that depend on the key alone, in the standard and
/// the URL-safe alphabet.
fn base64_forms(key: &[u8]) -> Vec<Vec<u8>> {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut forms = Vec::new();
    for align in 0..3usize {
        let mut input = vec![0u8; align];
        input.extend_from_slice(key);
        // Whole groups only: a partial last group depends on what follows the key.
        let whole = input.len() / 3 * 3;
        let mut out = Vec::with_capacity(whole / 3 * 4);
        for g in input[..whole].chunks(3) {
            let n = (u32::from(g[0]) << 16) | (u32::from(g[1]) << 8) | u32::from(g[2]);
            for shift in [18, 12, 6, 0] {
                out.push(STD[((n >> shift) & 63) as usize]);
            }
        }
        // The group holding the alignment bytes depends on what precedes the key.
        let core = out
            .get(if align == 0 { 0 } else { 4 }..)
            .unwrap_or_default();
        let url: Vec<u8> = core
            .iter()
            .map(|&c| match c {
                b'+' => b'-',
                b'/' => b'_',
                c => c,
            })
            .collect();
        forms.push(core.to_vec());
        forms.push(url);
    }
    forms
}

/// The JSON string escape at `bytes[i]`, if one starts there: the character it stands for
/// and its length (`\u0076` → `v`, 6; a surrogate pair → one character, 12; `\n` → a line
/// break, 2). A lone surrogate or a bad escape is none.
fn json_escape_at(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    if bytes.get(i) != Some(&b'\\') {
        return None;
    }
    let hex4 = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let simple = match *bytes.get(i + 1)? {
        b'u' => {
            let unit = hex4(i + 2)?;
            if (0xD800..0xDC00).contains(&unit) {
                // A high surrogate: the pair is one character.
                if bytes.get(i + 6..i + 8) != Some(b"\\u".as_slice()) {
                    return None;
                }
                let low = hex4(i + 8)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                let c = char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?;
                return Some((c, 12));
            }
            return Some((char::from_u32(unit)?, 6));
        }
        b'n' => '\n',
        b't' => '\t',
        b'r' => '\r',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        _ => return None,
    };
    Some((simple, 2))
}

/// `bytes` (at most 16) packed big-endian.
fn pack(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0u128, |v, b| (v << 8) | u128::from(*b))
}

/// A window's slot in the filter.
fn slot(v: u128) -> usize {
    let folded = (v as u64) ^ ((v >> 64) as u64);
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS)) as usize
}

impl Redactor {
    /// A redactor for `key`; with no key (or an empty one) it changes nothing.
    pub fn new(key: Option<&str>) -> Redactor {
        let Some(key) = key
            .filter(|k| !k.is_empty() && placeholder(k).is_none())
            .map(str::as_bytes)
        else {
            return Redactor::default();
        };
        let window = key.len().min(FRAGMENT);
        let mut forms = vec![key.to_vec()];
        if key.len() >= FRAGMENT {
            forms.extend(base64_forms(key).into_iter().filter(|f| f.len() >= window));
            forms.extend(hex_forms(key));
        }
        let public = public_prefix_len(key);
        let mut edge_forms = forms.clone();
        edge_forms[0] = key[public..].to_vec();
        let mut windows: Vec<u128> = forms
            .iter()
            .flat_map(|f| f.windows(window).map(pack))
            .collect();
        windows.sort_unstable();
        windows.dedup();
        let mut filter = vec![0u64; 1 << (FILTER_BITS - 6)];
        for w in &windows {
            let s = slot(*w);
            filter[s >> 6] |= 1 << (s & 63);
        }
        Redactor {
            window,
            windows,
            filter,
            starts: (0..window)
                .map(|j| {
                    forms
                        .iter()
                        .flat_map(|f| f.windows(window).map(move |w| pack(&w[..j])))
                        .collect()
                })
                .collect(),
            edge_forms,
            public: key[..public].to_vec(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.window > 0
    }

    fn is_window(&self, v: u128) -> bool {
        let s = slot(v);
        self.filter[s >> 6] & (1 << (s & 63)) != 0 && self.windows.binary_search(&v).is_ok()
    }

    /// The runs of `buf` covered by windows of the key, in order, touching runs merged;
    /// the first `covered` bytes count as covered (by windows that started before `buf`).
    fn cover(&self, buf: &[u8], covered: usize) -> Vec<Range<usize>> {
        let mut runs: Vec<Range<usize>> = Vec::new();
        let covered = covered.min(buf.len());
        if covered > 0 {
            runs.push(0..covered);
        }
        let w = self.window;
        if buf.len() < w {
            return runs;
        }
        let keep = if w == 16 {
            u128::MAX
        } else {
            (1u128 << (8 * w)) - 1
        };
        let mut v = pack(&buf[..w - 1]);
        for (end, b) in buf.iter().enumerate().skip(w - 1) {
            v = ((v << 8) | u128::from(*b)) & keep;
            if self.is_window(v) {
                let start = end + 1 - w;
                match runs.last_mut() {
                    Some(last) if start <= last.end => last.end = end + 1,
                    _ => runs.push(start..end + 1),
                }
            }
        }
        runs
    }

    /// Where the bytes that could still begin a window start: the earliest of the last
    /// `window − 1` positions whose rest of `buf` is the start of a window of the key.
    fn undecided_from(&self, buf: &[u8]) -> usize {
        let from = buf.len().saturating_sub(self.window - 1);
        (from..buf.len())
            .find(|p| self.starts[buf.len() - p].contains(&pack(&buf[*p..])))
            .unwrap_or(buf.len())
    }

    /// `bytes` with every covered run replaced by the marker.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut s = self.stream();
        let mut out = s.push(bytes);
        out.extend(s.finish());
        out
    }

    /// `text` with every covered run replaced by the marker.
    pub fn text(&self, text: &str) -> String {
        if !self.is_active() {
            return text.to_string();
        }
        // The key went out as a header value, so it is visible ASCII: a match never splits
        // a character. The lossy read only guards a key that never went out.
        String::from_utf8_lossy(&self.text_bytes(text.as_bytes())).into_owned()
    }

    /// [`Redactor::text`] over bytes that need not be UTF-8 (a log line a full disk cut
    /// mid-character): the same runs become markers, and every other byte is kept as it was
    /// (tester 50 F1: `scrub` read a log lossily, so a stray byte became U+FFFD for good).
    pub fn text_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        if !self.is_active() {
            return bytes.to_vec();
        }
        let raw = self.bytes(bytes);
        let unescaped = self.through_json_escapes(&raw);
        self.widen_markers(unescaped.as_deref().unwrap_or(&raw))
    }

    /// Decoded text can still hold JSON: a model's plan is JSON inside its answer, and the
    /// plan reader decodes its strings, so a key written with a `\u0076` escape every few
    /// characters (no [`FRAGMENT`]-byte run as written) came out whole in a step's args
    /// (tester 11 T11-1). Here the key is looked for in the text as a JSON reader would
    /// decode its escapes, and each run found becomes a marker over the escaped bytes it came
    /// from. `None` when nothing is escaped or nothing was found.
    fn through_json_escapes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if !bytes.contains(&b'\\') {
            return None;
        }
        // The decoded bytes, each with the range of `bytes` it came from.
        let mut decoded: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut from: Vec<Range<usize>> = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match json_escape_at(bytes, i) {
                Some((c, len)) => {
                    let mut buf = [0u8; 4];
                    for &b in c.encode_utf8(&mut buf).as_bytes() {
                        decoded.push(b);
                        from.push(i..i + len);
                    }
                    i += len;
                }
                None => {
                    decoded.push(bytes[i]);
                    from.push(i..i + 1);
                    i += 1;
                }
            }
        }
        let runs = self.cover(&decoded, 0);
        if runs.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for run in runs {
            let (start, end) = (from[run.start].start, from[run.end - 1].end);
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(MARKER.as_bytes());
            at = end;
        }
        out.extend_from_slice(&bytes[at..]);
        Some(out)
    }

    /// Decoded text puts together what arrived apart: a key echoed across stream deltas
    /// whose middle delta was redacted as it arrived reads `sk-test-abc[REDACTED]z012…`, the
    /// edges each shorter than a window (tester 8 F7). So in text each marker also takes the
    /// piece of the key that touches it on either side — at most `window − 1` bytes, as a
    /// longer piece is a window and covered already; never the key's public prefix — and
    /// markers a wholly taken piece stood between become one. Markers that touch as written
    /// stay as many as they were (a model's `[REDACTED][REDACTED]`). A short piece of the key
    /// that touches no marker stays (a public prefix, `sk-or-v1-`).
    fn widen_markers(&self, bytes: &[u8]) -> Vec<u8> {
        let marker = MARKER.as_bytes();
        let mut texts: Vec<&[u8]> = Vec::new();
        let mut rest = bytes;
        while let Some(at) = rest.windows(marker.len()).position(|w| w == marker) {
            texts.push(&rest[..at]);
            rest = &rest[at + marker.len()..];
        }
        texts.push(rest);
        if texts.len() == 1 {
            return bytes.to_vec();
        }
        let last = texts.len() - 1;
        let mut out = Vec::with_capacity(bytes.len());
        let mut taken_between = false;
        for (i, text) in texts.iter().enumerate() {
            // What follows a marker may continue the key; what precedes one may begin it.
            let from = if i > 0 {
                self.key_piece_len(text, true)
            } else {
                0
            };
            let kept = &text[from..];
            let to = kept.len()
                - if i < last {
                    self.key_piece_len(kept, false)
                } else {
                    0
                };
            let kept = &kept[..to];
            // A piece wholly taken joins the markers on either side into one.
            if i > 0 && !taken_between {
                out.extend_from_slice(marker);
            }
            taken_between = !text.is_empty() && kept.is_empty();
            out.extend_from_slice(kept);
        }
        out
    }

    /// The length of the longest opening (`at_start`) or ending of `text`, shorter than a
    /// window, that is a piece of the key past its public prefix or of one of its base64
    /// forms, at least [`EDGE_MIN`] bytes long — or, for an ending, the start of the key past
    /// its prefix when the prefix stands before it (`sk-test-SEC` before a marker: `SEC`
    /// goes, the prefix stays); 0 when there is none.
    fn key_piece_len(&self, text: &[u8], at_start: bool) -> usize {
        let piece = (EDGE_MIN..self.window.min(text.len() + 1))
            .rev()
            .find(|&n| {
                let piece = if at_start {
                    &text[..n]
                } else {
                    &text[text.len() - n..]
                };
                self.edge_forms
                    .iter()
                    .any(|f| f.windows(n).any(|w| w == piece))
            })
            .unwrap_or(0);
        if at_start || self.public.is_empty() {
            return piece;
        }
        let body = &self.edge_forms[0];
        let after_prefix = (1..self.window.min(body.len() + 1))
            .rev()
            .find(|&m| text.ends_with(&body[..m]) && text[..text.len() - m].ends_with(&self.public))
            .unwrap_or(0);
        piece.max(after_prefix)
    }

    /// Whether [`Redactor::text`] would take anything out of `text`: the one test of "holds
    /// the key" for what is sent and what is kept alike.
    pub fn holds_key(&self, text: &str) -> bool {
        self.is_active() && self.text(text) != text
    }

    /// The same, in place.
    pub fn in_place(&self, text: &mut String) {
        if self.is_active() {
            *text = self.text(text);
        }
    }

    /// A chunk-by-chunk redactor over this key.
    pub fn stream(&self) -> StreamRedactor<'_> {
        StreamRedactor {
            redactor: self,
            tail: Vec::new(),
            covered: 0,
            in_run: false,
        }
    }
}

/// Redacts a byte stream as it arrives; what it returns, concatenated, is exactly what
/// [`Redactor::bytes`] gives for the whole stream.
#[derive(Debug)]
pub struct StreamRedactor<'a> {
    redactor: &'a Redactor,
    /// Bytes not yet decided: a window starting among them may still match.
    tail: Vec<u8>,
    /// How many leading bytes of `tail` are already covered.
    covered: usize,
    /// The last byte given out was covered (its marker is already out).
    in_run: bool,
}

impl StreamRedactor<'_> {
    /// The next chunk: returns the bytes now decided.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if !self.redactor.is_active() {
            return chunk.to_vec();
        }
        let mut buf = std::mem::take(&mut self.tail);
        buf.extend_from_slice(chunk);
        let runs = self.redactor.cover(&buf, self.covered);
        let cut = self.redactor.undecided_from(&buf);
        // Runs start before `cut` (no window is read from there on), but may reach past it.
        self.covered = runs
            .last()
            .filter(|r| r.start <= cut && r.end > cut)
            .map_or(0, |r| r.end - cut);
        let out = self.emit(&buf[..cut], &runs);
        self.tail = buf[cut..].to_vec();
        out
    }

    /// The end of the stream: the held bytes, decided.
    pub fn finish(&mut self) -> Vec<u8> {
        let tail = std::mem::take(&mut self.tail);
        let covered = std::mem::take(&mut self.covered).min(tail.len());
        let runs: Vec<Range<usize>> = (covered > 0).then_some(0..covered).into_iter().collect();
        self.emit(&tail, &runs)
    }

    /// `bytes` with `runs` (clipped to it) as markers; a run continuing the last one given
    /// out adds no second marker.
    fn emit(&mut self, bytes: &[u8], runs: &[Range<usize>]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for run in runs {
            let end = run.end.min(bytes.len());
            if run.start >= end {
                continue;
            }
            out.extend_from_slice(&bytes[at..run.start]);
            if run.start > 0 || !self.in_run {
                out.extend_from_slice(MARKER.as_bytes());
            }
            at = end;
        }
        out.extend_from_slice(&bytes[at..]);
        if !bytes.is_empty() {
            self.in_run = at == bytes.len();
        }
        out
    }
}

/// Every configured provider key at once: the values of the variables the providers'
/// `key_env` name, as set now. The client's [`Redactor`] keeps the key of the endpoint it
/// calls out of what comes back; this keeps every configured key out of what ctxconsole
/// itself keeps and prints — the history store (see `HistoryStore::set_secrets`), the
/// output cache (`OutputCache::with_secrets`), and what `send` prints — where the operator's
/// own prompt or a pasted log may hold one (tester 12 T12-6). The request sent to the
/// provider is never passed through it: the model is given what the operator wrote.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    redactors: Vec<Redactor>,
}

impl Secrets {
    /// The keys held by the variables named `vars` (trimmed as the client reads them; an
    /// unset or empty variable holds none).
    pub fn from_env(vars: &[String]) -> Secrets {
        let keys: Vec<String> = vars
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect();
        Secrets::of_keys(keys.iter().map(String::as_str))
    }

    /// The variables of `vars` that hold a placeholder ([`placeholder`]), each with why:
    /// what is not taken out, for a command that takes keys out to say.
    pub fn placeholders_in(vars: &[String]) -> Vec<(String, &'static str)> {
        vars.iter()
            .filter_map(|v| {
                let value = std::env::var(v).ok()?;
                let value = value.trim();
                if value.is_empty() {
                    return None;
                }
                placeholder(value).map(|why| (v.clone(), why))
            })
            .collect()
    }

    /// The given keys, each once; placeholders ([`placeholder`]) are none.
    pub fn of_keys<'k>(keys: impl IntoIterator<Item = &'k str>) -> Secrets {
        let mut seen = std::collections::BTreeSet::new();
        Secrets {
            redactors: keys
                .into_iter()
                .filter(|k| seen.insert(*k))
                .map(|k| Redactor::new(Some(k)))
                // An empty key or a placeholder makes a redactor that holds nothing.
                .filter(Redactor::is_active)
                .collect(),
        }
    }

    pub fn is_active(&self) -> bool {
        !self.redactors.is_empty()
    }

    /// Whether `text` holds a configured key, as [`Redactor::holds_key`] finds one.
    pub fn holds(&self, text: &str) -> bool {
        self.redactors.iter().any(|r| r.holds_key(text))
    }

    /// `text` with every configured key taken out, as [`Redactor::text`] takes one.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.in_place(&mut out);
        out
    }

    pub fn in_place(&self, text: &mut String) {
        for r in &self.redactors {
            r.in_place(text);
        }
    }

    /// `bytes` with every configured key taken out as [`Secrets::text`] takes it out of
    /// text, every byte outside a key kept as it is, UTF-8 or not ([`Redactor::text_bytes`]):
    /// for a file rewritten whole, such as a log.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for r in &self.redactors {
            out = r.text_bytes(&out);
        }
        out
    }

    /// Every string in `value` (keys of objects included), redacted.
    pub fn json(&self, value: &mut serde_json::Value) {
        if !self.is_active() {
            return;
        }
        match value {
            serde_json::Value::String(s) => self.in_place(s),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            serde_json::Value::Object(map) => {
                let held = std::mem::take(map);
                for (mut k, mut v) in held {
                    self.in_place(&mut k);
                    self.json(&mut v);
                    map.insert(k, v);
                }
            }
            _ => {}
        }
    }

    /// An id (or a reference to one) as it is to be kept: unchanged when it holds no key;
    /// otherwise redacted and followed by `~` and [`short_sha`] of the id as given. An id is
    /// what dedup and links look rows up by, so the same id always gives the same kept id
    /// (a re-import is still "already present", a link still finds its plan), and two ids
    /// that differ only in the key stay two. The hash is of the whole id, not the key: it
    /// tells nothing of the key to whoever does not hold it already.
    ///
    /// [`short_sha`]: crate::core::history::short_sha
    pub fn id(&self, id: &mut String) {
        let kept = self.text(id);
        if kept != *id {
            *id = format!("{kept}~{}", crate::core::history::short_sha(id));
        }
    }

    /// Every text of a plan record as it is to be kept, whichever writer stores it: its id
    /// and the ids it names (replay, baseline: [`Secrets::id`]), caller, model, comparison,
    /// intent (the operator's prompt), steps, raw response, whole answer, trim record and
    /// baseline. A caller or model is a name that groups rows; it is redacted as text, so
    /// one given the same way is kept the same way and its rows still group.
    pub fn record(&self, record: &mut crate::core::history::PlanRecord) {
        if !self.is_active() {
            return;
        }
        for id in [Some(&mut record.id), record.replay_of.as_mut()]
            .into_iter()
            .flatten()
        {
            self.id(id);
        }
        if let Some(b) = record.expert_baseline.as_mut() {
            if let Some(id) = b.plan_id.as_mut() {
                self.id(id);
            }
            if let Some(model) = b.model.as_mut() {
                self.in_place(model);
            }
        }
        let steps = record.steps.iter_mut().chain(
            record
                .expert_baseline
                .iter_mut()
                .flat_map(|b| b.steps.iter_mut()),
        );
        for step in steps {
            self.in_place(&mut step.tool);
            self.json(&mut step.args);
            self.in_place(&mut step.rationale);
        }
        for text in [
            Some(&mut record.caller),
            Some(&mut record.model),
            Some(&mut record.intent),
            record.raw_response.as_mut(),
            record.failure_class.as_mut(),
            record.finish_reason.as_mut(),
            record.compare_group.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            self.in_place(text);
        }
        for value in [record.answer.as_mut(), record.trim_record.as_mut()]
            .into_iter()
            .flatten()
        {
            self.json(value);
        }
    }

    /// Every text of an execution as it is to be kept, as [`Secrets::record`] keeps a
    /// plan's: its id and the plan it names ([`Secrets::id`], so the link holds), caller,
    /// session and tool.
    pub fn execution(&self, e: &mut crate::core::history::ExecutionRecord) {
        if !self.is_active() {
            return;
        }
        for id in [Some(&mut e.id), e.plan_id.as_mut()].into_iter().flatten() {
            self.id(id);
        }
        for text in [Some(&mut e.caller), Some(&mut e.tool), e.session.as_mut()]
            .into_iter()
            .flatten()
        {
            self.in_place(text);
        }
    }
}

/// The keys configured for this run, for every text ctxconsole writes out on its own: what
/// [`for_output`] takes out. Set once at the command line's edge ([`set_output_keys`]) from
/// the workspace's config; none when it could not be read (then nothing is configured).
static OUTPUT_KEYS: std::sync::RwLock<Option<std::sync::Arc<Secrets>>> =
    std::sync::RwLock::new(None);

/// From now on [`for_output`] takes `secrets` out of what is written.
pub fn set_output_keys(secrets: Secrets) {
    let mut kept = OUTPUT_KEYS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *kept = secrets.is_active().then(|| std::sync::Arc::new(secrets));
}

/// `text` as it may leave ctxconsole on a line of its own — stderr, the log, an MCP error, a
/// console note — with every configured key ([`set_output_keys`]) as [`MARKER`]. The sinks
/// call it, not the code that words a message: an error can quote any value a file or a
/// server gave (tester 23 F2: an import file holding the key in its `spend` column had the key
/// printed and logged in "ended with an error").
pub fn for_output(text: &str) -> std::borrow::Cow<'_, str> {
    let keys = OUTPUT_KEYS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    match keys.map(|secrets| secrets.text(text)) {
        Some(redacted) if redacted != text => std::borrow::Cow::Owned(redacted),
        _ => std::borrow::Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-SECRET-0451-do-not-leak";

    /// Whether any `FRAGMENT`-byte piece of `key` is in `text`.
    fn leaks(text: &[u8], key: &str) -> bool {
        let w = key.len().min(FRAGMENT);
        key.as_bytes()
            .windows(w)
            .any(|k| text.windows(w).any(|t| t == k))
    }

    /// The rule written the plain way: mark every window found in the key, then one marker
    /// per run of marked bytes.
    fn by_the_rule(text: &[u8], key: &str) -> Vec<u8> {
        let w = key.len().min(FRAGMENT);
        let mut marked = vec![false; text.len()];
        for s in 0..(text.len() + 1).saturating_sub(w) {
            if key.as_bytes().windows(w).any(|k| k == &text[s..s + w]) {
                marked[s..s + w].fill(true);
            }
        }
        let mut out = Vec::new();
        for (i, b) in text.iter().enumerate() {
            if !marked[i] {
                out.push(*b);
            } else if i == 0 || !marked[i - 1] {
                out.extend_from_slice(MARKER.as_bytes());
            }
        }
        out
    }

    /// Standard base64, for the test: the key echoed in a `Basic` header or encoded field.
    fn b64(input: &[u8]) -> String {
        const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for g in input.chunks(3) {
            let b = [g[0], *g.get(1).unwrap_or(&0), *g.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
                if i <= g.len() {
                    out.push(STD[((n >> shift) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// `text` with every `n`th character of the key written as a JSON `\u` escape.
    fn escaped_every(key: &str, n: usize) -> String {
        key.chars()
            .enumerate()
            .map(|(i, c)| {
                if i % n == n - 1 {
                    format!("\\u{:04x}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect()
    }

    /// Tester 11 T11-1: a key inside a plan's JSON args with a `\u` escape every few
    /// characters has no 12-byte run as written; the plan reader decoded it whole into the
    /// stored step. Decoded text is now read through its JSON escapes as well, and what
    /// remains still parses as JSON.
    #[test]
    fn a_key_hidden_by_json_escapes_is_redacted_and_the_json_stays_whole() {
        let key = "sk-proj-Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy";
        let r = Redactor::new(Some(key));
        for n in [2, 5, 11, 12] {
            let hidden = escaped_every(key, n);
            assert!(
                !leaks(hidden.as_bytes(), key),
                "the test hides it: {hidden}"
            );
            let answer = format!(
                "Here is the plan: {{\"steps\":[{{\"order\":1,\"tool\":\"fs.write\",\"args\":{{\"path\":\".env\",\"text\":\"{hidden}\"}}}}]}}"
            );
            let out = r.text(&answer);
            let json = &out[out.find('{').unwrap()..];
            let v: serde_json::Value =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
            let text = v["steps"][0]["args"]["text"].as_str().unwrap();
            assert!(!leaks(text.as_bytes(), key), "every {n}th escaped: {text}");
            assert!(text.contains(MARKER), "{text}");
            assert_eq!(v["steps"][0]["args"]["path"], ".env");
        }
        // Escapes that hide nothing are left as written.
        let plain = r#"{"text": "caf\u00e9 \n \"quoted\" \ud83d\ude00"}"#;
        assert_eq!(r.text(plain), plain);
    }

    /// Tester 8 F7: a key echoed across three stream deltas, the middle one long enough
    /// to be redacted as it arrived, decoded to `<11 bytes>[REDACTED]<11 bytes>`: half the
    /// key shown and stored. In the decoded text a marker takes the key's pieces that touch
    /// it, however short; a short piece of the key elsewhere, or text that is not the key
    /// beside a marker, stays.
    #[test]
    fn a_marker_takes_the_short_pieces_of_the_key_beside_it() {
        let r = Redactor::new(Some(KEY));
        let (head, tail) = (&KEY[..11], &KEY[KEY.len() - 11..]);
        let decoded = format!("auth was Bearer {head}{MARKER}{tail} {{\"steps\": []}}");
        // The public prefix stays, as everywhere; the rest of the key goes.
        assert_eq!(
            r.text(&decoded),
            format!("auth was Bearer sk-test-{MARKER} {{\"steps\": []}}")
        );
        // Two redacted deltas with a short piece between them: one marker.
        let decoded = format!("x {head}{MARKER}{}{MARKER}{tail}.", &KEY[11..16]);
        assert_eq!(r.text(&decoded), format!("x sk-test-{MARKER}."));
        // Not beside a marker, a short piece is not the key (public prefixes stay).
        assert_eq!(
            r.text(&format!("prefix {head} ok")),
            format!("prefix {head} ok")
        );
        // A model's own marker keeps the word glued to it: pieces under 4 bytes are not
        // taken (tester 9 T9-1: "stu" and "s" are pieces of a long key).
        let long_key = Redactor::new(Some("sk-test-abcdefghijklmnopqrstuvwxyz0123456789"));
        let own = format!("mask it as {MARKER}stuff, kept as{MARKER}");
        assert_eq!(long_key.text(&own), own);
        // Tester 10 T10-2: the key's public prefix beside a model's own marker stays, as
        // does a word sharing letters with the prefix, and two markers written side by
        // side stay two.
        let proj = Redactor::new(Some("sk-proj-Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy"));
        for own in [
            format!("OPENAI_API_KEY=sk-proj-{MARKER} then"),
            format!("the {MARKER}-project and {MARKER}{MARKER} here"),
        ] {
            assert_eq!(proj.text(&own), own);
        }
        let own = format!("{MARKER}test and -test{MARKER}");
        assert_eq!(long_key.text(&own), own);
        assert_eq!(public_prefix_len(b"sk-or-v1-abcdef0123"), 9);
        assert_eq!(public_prefix_len(b"sk-ant-api03-AbCd"), 13);
        assert_eq!(public_prefix_len(KEY.as_bytes()), 8);
        assert_eq!(public_prefix_len(b"AbCdEf-0123"), 0);
        // Beside a marker, only what continues the key goes.
        assert_eq!(
            r.text(&format!("see:{MARKER}; done")),
            format!("see:{MARKER}; done")
        );
        // The stream's own bytes keep the rule the stream gives (what `bytes` says).
        assert_eq!(
            r.bytes(decoded.as_bytes()),
            by_the_rule(decoded.as_bytes(), KEY)
        );
    }

    #[test]
    fn the_key_written_as_hex_is_redacted_too() {
        let r = Redactor::new(Some(KEY));
        for hex in hex_forms(KEY.as_bytes()) {
            let hex = String::from_utf8(hex).unwrap();
            let out = r.text(&format!("500: key={hex} rejected"));
            assert!(out.contains(MARKER), "{out}");
            for w in hex.as_bytes().windows(FRAGMENT) {
                let w = std::str::from_utf8(w).unwrap();
                assert!(!out.contains(w), "{w} left in {out}");
            }
        }
        // Hex that is not the key is left alone.
        let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        assert_eq!(r.text(digest), digest);
    }

    #[test]
    fn the_key_in_base64_at_any_alignment_is_redacted_too() {
        let r = Redactor::new(Some(KEY));
        for prefix in ["", "u:", "ab:", "user:"] {
            let encoded = b64(format!("{prefix}{KEY}").as_bytes());
            let echoed = format!("auth was Basic {encoded} ok");
            let out = r.text(&echoed);
            assert!(out.contains(MARKER), "{prefix}: {out}");
            // No 12 characters of the encoded key are left.
            let core = &b64(KEY.as_bytes())[4..];
            for w in core.as_bytes().windows(FRAGMENT) {
                let w = std::str::from_utf8(w).unwrap();
                assert!(!out.contains(w), "{prefix}: {w} left in {out}");
            }
            // The stream gives the same, split anywhere.
            let mut s = r.stream();
            let mut streamed = Vec::new();
            for chunk in echoed.as_bytes().chunks(5) {
                streamed.extend(s.push(chunk));
            }
            streamed.extend(s.finish());
            assert_eq!(streamed, r.bytes(echoed.as_bytes()));
        }
        // Text that merely looks like base64 is left alone.
        assert_eq!(r.text("aGVsbG8gd29ybGQ="), "aGVsbG8gd29ybGQ=");
    }

    #[test]
    fn the_key_a_bearer_token_and_long_pieces_become_one_marker_each() {
        let r = Redactor::new(Some(KEY));
        let text = format!(
            "{{\"error\":\"bad header: Bearer {KEY}\",\"seen\":\"{}…\",\"twice\":\"{KEY}{KEY}\",\"short\":\"sk-test-SEC\"}}",
            &KEY[..20]
        );
        let out = r.text(&text);
        assert!(!leaks(out.as_bytes(), KEY), "{out}");
        assert_eq!(
            out,
            "{\"error\":\"bad header: Bearer [REDACTED]\",\"seen\":\"[REDACTED]…\",\"twice\":\"[REDACTED]\",\"short\":\"sk-test-SEC\"}"
        );
        // Text with nothing of the key, and no key at all, pass unchanged.
        let plain = "{\"steps\":[{\"tool\":\"memory.store\"}]} é";
        assert_eq!(r.text(plain), plain);
        assert_eq!(Redactor::new(None).text(&text), text);
        assert_eq!(Redactor::new(Some("")).text(&text), text);
    }

    /// Every configured key at once, in text and in every string of a JSON value (object
    /// keys too); with none configured, nothing changes.
    #[test]
    fn secrets_take_every_configured_key_out_of_text_and_json() {
        let other = "or-key-0123456789abcdefXYZ";
        let s = Secrets::of_keys([KEY, other, KEY, ""]);
        assert_eq!(s.redactors.len(), 2);
        assert_eq!(
            s.text(&format!("a {KEY} b {other} c")),
            "a [REDACTED] b [REDACTED] c"
        );
        let mut v = serde_json::json!({
            "intent": format!("use {KEY}"),
            other: [1, format!("x{other}"), null],
            "n": 3,
        });
        s.json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"intent": "use [REDACTED]", "[REDACTED]": [1, "x[REDACTED]", null], "n": 3})
        );
        let none = Secrets::default();
        assert!(!none.is_active());
        assert_eq!(none.text(KEY), KEY);
    }

    /// Tester 15 F2: a plan's caller, model and ids, and every name of an execution, were
    /// stored as given. Every text is kept without the key; an id the same way each time
    /// (a re-import matches, a link still finds its plan) and two ids apart stay apart.
    #[test]
    fn every_text_of_a_plan_and_an_execution_is_kept_without_the_key_ids_alike() {
        use crate::core::history::{ExecutionRecord, PlanRecord};
        let s = Secrets::of_keys([KEY]);
        let mut plan: PlanRecord = serde_json::from_value(serde_json::json!({
            "id": format!("p-{KEY}"), "at": 1, "caller": format!("u-{KEY}"),
            "model": format!("gw/{KEY}"), "intent": "i", "outcome": "ok",
            "steps": [{"order": 1, "tool": "t"}], "failure_class": null, "finish_reason": null,
            "raw_response": null, "trim_record": null, "duration_ms": null,
            "replay_of": format!("p-{KEY}"), "compare_group": format!("cmp-{KEY}"),
            "expert_baseline": {"model": format!("m-{KEY}"), "plan_id": format!("b-{KEY}"),
                "steps": []},
        }))
        .unwrap();
        s.record(&mut plan);
        let stored = serde_json::to_string(&plan).unwrap();
        assert!(!leaks(stored.as_bytes(), KEY), "{stored}");
        assert_eq!(plan.caller, "u-[REDACTED]");
        assert_eq!(plan.model, "gw/[REDACTED]");
        assert!(plan.id.starts_with("p-[REDACTED]~"), "{}", plan.id);
        assert_eq!(plan.replay_of.as_deref(), Some(plan.id.as_str()));
        let mut e = ExecutionRecord {
            id: format!("p-{KEY}"),
            at: 1,
            at_nanos: 0,
            caller: format!("u-{KEY}"),
            session: Some(format!("s-{KEY}")),
            plan_id: Some(format!("p-{KEY}")),
            tool: format!("t-{KEY}"),
            ok: true,
        };
        s.execution(&mut e);
        let stored = serde_json::to_string(&e).unwrap();
        assert!(!leaks(stored.as_bytes(), KEY), "{stored}");
        // The same id given anywhere is kept as one id: the execution still names its plan.
        assert_eq!(e.plan_id.as_deref(), Some(plan.id.as_str()));
        assert_eq!(e.id, plan.id);
        assert_eq!(e.caller, plan.caller);
        assert_eq!(e.session.as_deref(), Some("s-[REDACTED]"));
        assert_eq!(e.tool, "t-[REDACTED]");
        // Kept again, it stays as it is (a scrub after an import changes nothing).
        let (again_plan, again_e) = (
            {
                let mut p = plan.clone();
                s.record(&mut p);
                p
            },
            {
                let mut x = e.clone();
                s.execution(&mut x);
                x
            },
        );
        assert_eq!((again_plan, again_e), (plan, e));
        // Two ids that differ only in the key stay two; an id without it is left as given.
        let other = Secrets::of_keys([KEY, "sk-other-SECRET-9999-rotated"]);
        let (mut a, mut b) = (
            format!("p-{KEY}"),
            "p-sk-other-SECRET-9999-rotated".to_string(),
        );
        other.id(&mut a);
        other.id(&mut b);
        assert_ne!(a, b);
        let mut plain = "litellm-r1".to_string();
        other.id(&mut plain);
        assert_eq!(plain, "litellm-r1");
    }

    #[test]
    fn a_short_key_is_redacted_whole_and_only_whole() {
        let r = Redactor::new(Some("hunter22"));
        assert_eq!(
            r.text("pw hunter22, not hunter23 nor hunter2"),
            "pw [REDACTED], not hunter23 nor hunter2"
        );
    }

    #[test]
    fn a_placeholder_key_is_no_secret() {
        for stand_in in [
            "ollama",
            "EMPTY",
            "x",
            "lm-studio",
            "sk-no-key-required",
            "hunter2",
        ] {
            assert!(placeholder(stand_in).is_some(), "{stand_in}");
            let r = Redactor::new(Some(stand_in));
            assert!(!r.is_active(), "{stand_in}");
            let text = format!("ollama/llama3.2 explain the next example: {stand_in}");
            assert_eq!(r.text(&text), text);
            assert!(!Secrets::of_keys([stand_in]).is_active());
        }
        for secret in [
            KEY,
            "token-abc123",
            "gsk_aBcDeFgHiJkLmNoPqRsTuVwXyZ",
            "hunter22",
        ] {
            assert_eq!(placeholder(secret), None, "{secret}");
            assert!(Redactor::new(Some(secret)).is_active(), "{secret}");
        }
    }

    #[test]
    fn a_stream_split_anywhere_gives_what_the_whole_gives() {
        let r = Redactor::new(Some(KEY));
        let text = format!(
            "data: {{\"x\":\"Bearer {KEY}\"}}\n\ndata: {}|{}|{KEY}{KEY} end é {}",
            &KEY[..14],
            &KEY[5..],
            &KEY[..FRAGMENT - 1]
        );
        let whole = r.bytes(text.as_bytes());
        assert!(!leaks(&whole, KEY));
        let bytes = text.as_bytes();
        for a in 0..=bytes.len() {
            for b in (a..=bytes.len()).step_by(7) {
                let mut s = r.stream();
                let mut out = s.push(&bytes[..a]);
                out.extend(s.push(&bytes[a..b]));
                out.extend(s.push(&bytes[b..]));
                out.extend(s.finish());
                assert_eq!(out, whole, "split at {a}, {b}");
            }
        }
        // One byte at a time.
        let mut s = r.stream();
        let mut out = Vec::new();
        for b in bytes {
            out.extend(s.push(std::slice::from_ref(b)));
        }
        out.extend(s.finish());
        assert_eq!(out, whole);
    }

    #[test]
    fn only_what_could_begin_the_key_is_held_back() {
        let r = Redactor::new(Some(KEY));
        let mut s = r.stream();
        // A finished event goes out at once: a [DONE] is never kept waiting.
        assert_eq!(s.push(b"data: [DONE]\n\n"), b"data: [DONE]\n\n");
        assert_eq!(s.push(b"x: sk-te"), b"x: ");
        // (a character that begins no window of the key or of its base64 forms)
        assert_eq!(s.push(b"~"), b"sk-te~");
        assert_eq!(s.push(b" sk-test-S"), b" ");
        assert_eq!(s.push(b"ECRET-0451"), b"[REDACTED]");
        assert_eq!(s.push(b"-do-not-leak!"), b"!");
        assert_eq!(s.finish(), b"");
    }

    #[test]
    fn random_text_with_planted_pieces_never_leaks_a_long_piece() {
        // A small deterministic generator: no dependency, the same cases every run.
        let mut seed: u64 = 0x2026_1123;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n.max(1)
        };
        let alphabet = b"sk-tesSECRT0451donla \"{}:";
        // A usual key, a short one, and one that repeats itself (runs longer than the key);
        // each with a digit, as a placeholder is no key ([`placeholder`]).
        for (key, cases) in [
            (KEY, 2_000),
            ("s-e-5-s1", 300),
            ("a1a1a1a1a1a1a1a1a1a1", 300),
        ] {
            let r = Redactor::new(Some(key));
            for _ in 0..cases {
                let mut text = Vec::new();
                for _ in 0..next(6) {
                    for _ in 0..next(30) {
                        text.push(alphabet[next(alphabet.len())]);
                    }
                    let from = next(key.len());
                    let to = (from + next(key.len() + 1)).min(key.len());
                    text.extend_from_slice(&key.as_bytes()[from..to]);
                }
                let whole = r.bytes(&text);
                assert!(!leaks(&whole, key), "{}", String::from_utf8_lossy(&text));
                assert_eq!(whole, by_the_rule(&text, key));
                // Cut into up to eight chunks at random places.
                let mut s = r.stream();
                let mut out = Vec::new();
                let mut at = 0;
                for _ in 0..next(8) {
                    let to = (at + next(text.len() / 3 + 2)).min(text.len());
                    out.extend(s.push(&text[at..to]));
                    at = to;
                }
                out.extend(s.push(&text[at..]));
                out.extend(s.finish());
                assert_eq!(out, whole, "{}", String::from_utf8_lossy(&text));
            }
        }
    }
}
