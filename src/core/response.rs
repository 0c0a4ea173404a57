//! What a model sent back, made usable (DESIGN §2.8): reasoning stripped, then the answer
//! decoded by the most literal stage that works, and which stage that was.

use serde::Serialize;

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

fn strip_tags(text: &str) -> String {
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

/// The first `{…}`/`[…]` span whose brackets balance (outside strings) and that parses.
fn balanced(text: &str) -> Option<serde_json::Value> {
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

/// Length of the balanced span starting at `s[0]` (an opening bracket), if it closes.
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
}
