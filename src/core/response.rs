//! What a model sent back, made usable (DESIGN §2.8): reasoning stripped, then the answer
//! decoded by the most literal stage that works, and which stage that was.

use serde::Serialize;
use std::collections::BTreeMap;

/// Closing tags of the three reasoning forms; matched in any case.
const CLOSERS: [&str; 3] = ["</think>", "</reasoning>", "[/reasoning]"];
const OPENERS: [&str; 3] = ["<think>", "<reasoning>", "[reasoning]"];

/// An answer with its reasoning taken out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stripped {
    /// `None`: a reasoning block was opened and never closed — the model never reached
    /// its answer.
    pub answer: Option<String>,
    pub reasoning: String,
}

/// ASCII-lowercased copy with the same byte offsets (tags are ASCII; other text is kept).
fn lower(text: &str) -> String {
    text.to_ascii_lowercase()
}

fn last_of(haystack: &str, needles: &[&str]) -> Option<(usize, usize)> {
    needles
        .iter()
        .filter_map(|n| haystack.rfind(n).map(|i| (i, n.len())))
        .max_by_key(|(i, _)| *i)
}

/// Split reasoning from the answer: everything up to the **last** closing tag is reasoning
/// (this also covers a leading text closed by a lone `</think>`, when the model's template
/// opened the block); an opening tag after it that never closes means there is no answer.
pub fn strip_reasoning(text: &str) -> Stripped {
    let low = lower(text);
    let (reasoning_end, answer_start) = match last_of(&low, &CLOSERS) {
        Some((i, len)) => (i, i + len),
        None => (0, 0),
    };
    let rest = &low[answer_start..];
    if OPENERS.iter().any(|o| rest.contains(o)) {
        return Stripped {
            answer: None,
            reasoning: strip_tags(text).trim().to_string(),
        };
    }
    Stripped {
        answer: Some(text[answer_start..].trim().to_string()),
        reasoning: strip_tags(&text[..reasoning_end]).trim().to_string(),
    }
}

/// Every reasoning tag taken out, in any case, one kind after another: openers, then
/// closers. A tag that forms only once another inside it goes (`<thi<think>nk>`) goes too.
fn strip_tags(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    for tag in OPENERS.iter().chain(CLOSERS.iter()) {
        out = without_tag(&out, tag.as_bytes());
    }
    // Only whole ASCII tags were taken out, so the UTF-8 is intact.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `text` with every occurrence of `tag` (ASCII, any case) removed until none is left, in
/// one pass: bytes go onto the output and a tag completed at its end comes off again. (No
/// tag overlaps itself, so this is what removing the first one over and over gives — which
/// re-read the whole text per tag: quadratic in the number of tags.)
fn without_tag(text: &[u8], tag: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for &b in text {
        out.push(b);
        if out.len() >= tag.len() && out[out.len() - tag.len()..].eq_ignore_ascii_case(tag) {
            out.truncate(out.len() - tag.len());
        }
    }
    out
}

/// How the answer was recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeStage {
    /// The answer was one JSON value.
    Direct,
    /// Inside a Markdown code fence.
    Fence,
    /// A JSON value followed by prose.
    TrailingProse,
    /// The first balanced `{…}` or `[…]` found in the text.
    Balanced,
}

impl DecodeStage {
    /// The stage's name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            DecodeStage::Direct => "direct",
            DecodeStage::Fence => "fence",
            DecodeStage::TrailingProse => "trailing_prose",
            DecodeStage::Balanced => "balanced",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decoded {
    pub value: serde_json::Value,
    pub stage: DecodeStage,
}

/// How deep JSON text nests at each byte, brackets inside strings left out: one reading
/// for every place that must know before serde_json does (an answer a stage read only part
/// of, an MCP server's stdout as it streams). Feed it bytes in order.
#[derive(Debug, Default, Clone)]
pub struct JsonNesting {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl JsonNesting {
    /// How deep the text read so far stands (0: outside every bracket).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Take the next byte; the depth it opened when it is an opening bracket.
    pub fn byte(&mut self, b: u8) -> Option<usize> {
        if self.in_string {
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return None;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => {
                self.depth += 1;
                return Some(self.depth);
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        None
    }
}

/// Whether `text` nests brackets (outside strings) deeper than the JSON reader takes
/// ([`JSON_DEPTH_MAX`](crate::core::error::JSON_DEPTH_MAX)): what a failure says instead of
/// what an inner part lacks (tester 5 C9). One pass.
pub fn nests_too_deep(text: &str) -> bool {
    let mut nesting = JsonNesting::default();
    text.bytes().any(|b| {
        nesting
            .byte(b)
            .is_some_and(|d| d > crate::core::error::JSON_DEPTH_MAX)
    })
}

/// Decode an answer (reasoning already stripped): trim → code fence → first JSON value with
/// prose after it tolerated → balanced-brace extraction aware of strings and escapes.
pub fn decode_answer(answer: &str) -> Option<Decoded> {
    let text = answer.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Some(Decoded {
            value,
            stage: DecodeStage::Direct,
        });
    }
    if let Some(inner) = fenced(text)
        && let Ok(value) = serde_json::from_str(inner.trim())
    {
        return Some(Decoded {
            value,
            stage: DecodeStage::Fence,
        });
    }
    if let Some(value) = first_value(text) {
        return Some(Decoded {
            value,
            stage: DecodeStage::TrailingProse,
        });
    }
    balanced(text).map(|value| Decoded {
        value,
        stage: DecodeStage::Balanced,
    })
}

/// The body of the first ``` fence (language tag dropped); an unclosed fence runs to the end.
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
    let body = &after[body_start..];
    Some(body.find("```").map_or(body, |end| &body[..end]))
}

/// The first JSON value at the start of `text`, anything after it ignored.
fn first_value(text: &str) -> Option<serde_json::Value> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    match stream.next() {
        Some(Ok(v)) if v.is_object() || v.is_array() => Some(v),
        _ => None,
    }
}

/// The first `{…}`/`[…]` span whose brackets balance (outside strings) and that parses:
/// of every opening bracket whose span closes and parses, the leftmost.
///
/// One pass, however many brackets there are. A scan started at a bracket reads the bytes
/// after it in one of three states (code, in a string, just after a backslash in a string),
/// and scans that are in the same state at the same byte read everything after it alike. So
/// the scans of all the starts travel together in at most three [`Lane`]s; in a lane, a
/// start closes when the lane's height comes back to where it opened. (Trying each start in
/// turn and scanning to its close was quadratic: 100 KB of `[` took 7.8 s.)
fn balanced(text: &str) -> Option<serde_json::Value> {
    let bytes = text.as_bytes();
    let mut lanes: Vec<Lane> = Vec::with_capacity(4);
    let mut next: Vec<Lane> = Vec::with_capacity(4);
    // The leftmost start found so far whose span parses.
    let mut best: Option<(usize, serde_json::Value)> = None;
    for (i, &b) in bytes.iter().enumerate() {
        let opens = matches!(b, b'{' | b'[');
        for lane in &mut lanes {
            if lane.lex == Lex::Code {
                if opens {
                    lane.height += 1;
                } else if matches!(b, b'}' | b']') {
                    lane.height -= 1;
                    for start in lane.close(lane.height) {
                        if best.as_ref().is_none_or(|(first, _)| start < *first)
                            && let Ok(v) = serde_json::from_slice(&bytes[start..=i])
                        {
                            best = Some((start, v));
                        }
                    }
                }
            }
            lane.lex = lane.lex.after(b);
        }
        // A start after one that already parsed can never come first.
        if opens && best.is_none() {
            match lanes.iter_mut().find(|l| l.lex == Lex::Code) {
                Some(lane) => lane.open(lane.height - 1, i),
                None => {
                    let mut lane = Lane::new(Lex::Code, 1);
                    lane.open(0, i);
                    lanes.push(lane);
                }
            }
        }
        // Lanes in the same state travel together from here on; empty ones are done.
        if lanes.len() > 1 || lanes.iter().any(|l| l.pending == 0) {
            for lane in lanes.drain(..).filter(|l| l.pending > 0) {
                match next.iter_mut().find(|n| n.lex == lane.lex) {
                    Some(same) => same.absorb(lane),
                    None => next.push(lane),
                }
            }
            std::mem::swap(&mut lanes, &mut next);
        }
        if best.is_some() && lanes.is_empty() {
            break;
        }
    }
    best.map(|(_, v)| v)
}

/// Where a scan is: in code, in a string, or just after a backslash in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Code,
    Text,
    Escape,
}

impl Lex {
    fn after(self, b: u8) -> Lex {
        match (self, b) {
            (Lex::Code, b'"') => Lex::Text,
            (Lex::Code, _) => Lex::Code,
            (Lex::Text, b'"') => Lex::Code,
            (Lex::Text, b'\\') => Lex::Escape,
            (Lex::Text | Lex::Escape, _) => Lex::Text,
        }
    }
}

/// The scans of every start that read the text alike from here on.
#[derive(Debug)]
struct Lane {
    lex: Lex,
    /// Opening minus closing brackets the lane has read in code.
    height: i64,
    /// Starts still open, by the height at which each one closes (always below `height`).
    closes_at: BTreeMap<i64, Vec<usize>>,
    pending: usize,
}

impl Lane {
    fn new(lex: Lex, height: i64) -> Lane {
        Lane {
            lex,
            height,
            closes_at: BTreeMap::new(),
            pending: 0,
        }
    }

    fn open(&mut self, closes_at: i64, start: usize) {
        self.closes_at.entry(closes_at).or_default().push(start);
        self.pending += 1;
    }

    /// The starts that close at `height`.
    fn close(&mut self, height: i64) -> Vec<usize> {
        let starts = self.closes_at.remove(&height).unwrap_or_default();
        self.pending -= starts.len();
        starts
    }

    /// Take in another lane that has reached the same state: its starts keep their depth
    /// below the lane's height. The smaller side moves, so a start moves O(log n) times.
    fn absorb(&mut self, mut other: Lane) {
        if other.pending > self.pending {
            std::mem::swap(self, &mut other);
        }
        let shift = self.height - other.height;
        for (at, starts) in other.closes_at {
            self.closes_at.entry(at + shift).or_default().extend(starts);
        }
        self.pending += other.pending;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_forms_are_stripped_on_the_last_closing_tag() {
        let s = strip_reasoning("<THINK>plan\nit</think>\n{\"a\":1}");
        assert_eq!(s.answer.as_deref(), Some("{\"a\":1}"));
        assert_eq!(s.reasoning, "plan\nit");
        let s = strip_reasoning("[REASONING]x[/REASONING] <reasoning>y</Reasoning>ok");
        assert_eq!(s.answer.as_deref(), Some("ok"));
        // The template opened the block: a leading text closed by a lone tag.
        let s = strip_reasoning("the user wants a blog\n</think>{\"steps\":[]}");
        assert_eq!(s.answer.as_deref(), Some("{\"steps\":[]}"));
        assert_eq!(s.reasoning, "the user wants a blog");
        // Opened, never closed: no answer.
        let s = strip_reasoning("<think>\nLet me look at the catalog again");
        assert_eq!(s.answer, None);
        assert!(s.reasoning.contains("catalog"));
        let s = strip_reasoning("<think>a</think>{\"x\":1}<think>more");
        assert_eq!(s.answer, None);
        assert_eq!(strip_reasoning("plain").answer.as_deref(), Some("plain"));
    }

    #[test]
    fn decode_names_the_stage_that_recovered_the_answer() {
        let d = |t: &str| decode_answer(t).map(|d| (d.value, d.stage));
        assert_eq!(
            d(" {\"a\":1} "),
            Some((json!({"a":1}), DecodeStage::Direct))
        );
        assert_eq!(
            d("Here:\n```json\n{\"a\":1}\n```\nthanks"),
            Some((json!({"a":1}), DecodeStage::Fence))
        );
        assert_eq!(
            d("{\"a\":1}\n\nI picked these because…"),
            Some((json!({"a":1}), DecodeStage::TrailingProse))
        );
        assert_eq!(
            d("Sure! {\"a\":\"}{\\\"\",\"b\":[1]} done"),
            Some((json!({"a":"}{\"","b":[1]}), DecodeStage::Balanced))
        );
        assert_eq!(
            d("{\"steps\": [{\"order\": 1, \"tool\": \"x\", \"args\": {"),
            None
        );
        assert_eq!(d("I'm sorry, but I can't help with that."), None);
        assert_eq!(d(""), None);
        // The name shown in summaries is the one the JSON carries.
        for stage in [
            DecodeStage::Direct,
            DecodeStage::Fence,
            DecodeStage::TrailingProse,
            DecodeStage::Balanced,
        ] {
            assert_eq!(json!(stage), json!(stage.as_str()));
        }
    }

    /// Adversarial answers of 100 KB (a model that loops on one character, or an attacker's
    /// reply): every stage finishes in one pass over the text and finds what is there.
    #[test]
    fn hundred_kilobytes_of_brackets_decode_in_one_pass() {
        const N: usize = 100_000;
        for open in ["[", "{", "[\"", "{\"a\":", "[\\\"", "\"[", "{[", "<think>"] {
            let text = open.repeat(N / open.len());
            assert_eq!(decode_answer(&text), None, "{open}");
            // The one balanced value at the end is still found, after every failed start.
            let tail = format!("{text} {{\"ok\":[1]}}");
            assert_eq!(
                decode_answer(&tail),
                Some(Decoded {
                    value: json!({"ok": [1]}),
                    stage: DecodeStage::Balanced
                }),
                "{open}"
            );
        }
        // Deep balanced nesting where every span closes and none parses, then a value. (Each
        // span is still handed to serde, which stops at its nesting limit; 10,000 of them
        // keep this quick in a debug build.)
        let deep = format!("{}x{} {{\"a\":1}}", "[".repeat(N / 20), "]".repeat(N / 20));
        assert_eq!(decode_answer(&deep).map(|d| d.value), Some(json!({"a": 1})));
        let closed = "[]".repeat(N / 2);
        assert_eq!(decode_answer(&closed).map(|d| d.value), Some(json!([])));
    }

    /// The decoder's balanced stage as it was: every opening bracket in turn, scanned to its
    /// close (quadratic), kept as the oracle the one-pass scan must agree with.
    fn balanced_by_every_start(text: &str) -> Option<serde_json::Value> {
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(rel) = bytes[from..].iter().position(|b| *b == b'{' || *b == b'[') {
            let start = from + rel;
            if let Some(end) = matching_end(&bytes[start..])
                && let Ok(v) = serde_json::from_slice(&bytes[start..start + end])
            {
                return Some(v);
            }
            from = start + 1;
        }
        None
    }

    fn matching_end(s: &[u8]) -> Option<usize> {
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        for (i, &b) in s.iter().enumerate() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// Tag stripping as it was: find the first tag, cut it, lower-case the whole text again.
    fn strip_tags_by_repeated_search(text: &str) -> String {
        let mut out = text.to_string();
        for tag in OPENERS.iter().chain(CLOSERS.iter()) {
            loop {
                let low = lower(&out);
                let Some(i) = low.find(tag) else { break };
                out.replace_range(i..i + tag.len(), "");
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Texts made of the characters that steer the scan (brackets, quotes, backslashes,
        /// separators and a few values): the one-pass scan finds what trying every start
        /// found.
        #[test]
        fn one_pass_agrees_with_trying_every_start(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "{", "}", "[", "]", "\"", "\\", "\\\"", ":", ",", "1", "a", " ",
                    "\"k\"", "{\"a\":1}", "[1]", "\"}{\"", "é",
                ]),
                0..60,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(balanced(&text), balanced_by_every_start(&text), "{}", text);
        }

        /// Tags cut into pieces by other tags, in mixed case: one pass strips what repeated
        /// searching stripped.
        #[test]
        fn one_pass_strips_what_repeated_search_stripped(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "<think>", "</THINK>", "<thi", "nk>", "</", "<", ">", "[", "]", "/",
                    "reasoning", "REAS", "oning", "<reasoning>", "[/reasoning]", "x", "é",
                ]),
                0..40,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(strip_tags(&text), strip_tags_by_repeated_search(&text));
        }
    }

    #[test]
    fn hundred_kilobytes_of_reasoning_tags_strip_in_one_pass() {
        const N: usize = 100_000;
        let text = format!("{}{{\"a\":1}}", "<think>x</think>".repeat(N / 16));
        let s = strip_reasoning(&text);
        assert_eq!(s.answer.as_deref(), Some("{\"a\":1}"));
        assert_eq!(s.reasoning, "x".repeat(N / 16));
        let s = strip_reasoning(&"<THINK>".repeat(N / 7));
        assert_eq!((s.answer, s.reasoning), (None, String::new()));
    }
}
