//! The messages a gateway's traffic records carry, read typed (tester 9 T9-14): an
//! OpenTelemetry chat span's `gen_ai.input.messages` / `gen_ai.output.messages` and a LiteLLM
//! spend log's `messages` / `response`, recorded as JSON text (most instrumentations, a
//! database export) or as values. Parsed whole into a `serde_json::Value` tree they cost
//! 22–46× their text (1.1 GB for a 50 MB list of tiny parts); read here by serde visitors,
//! only what a plan's reading uses is kept — roles, the last user message's text, the
//! answer's text, finish reason and refusal, tool-call names and arguments — and the rest is
//! read past (still checked as JSON: syntax, nesting, lone surrogates, as [`Skip`] checks).
//!
//! Both sources share one reading of each part: [`TextOf`] for a message's text (a string, or
//! the text parts of a list), [`Calls`] for tool calls. A chat completion's answer (a spend
//! log's `response`) is read as a live answer is: its content by [`AnswerContent`] with the
//! live reader's rule for parts (`core::failure::content_part`), a legacy `function_call` as
//! one call; a span's output messages as a live reply's choices (the first the answer, the
//! others counted), its `parts` by the same rule, a `tool_call` part one call, a
//! `reasoning` part the answer's reasoning; and an intent's parts by that rule too. Tool
//! calls past
//! [`bounds::PLAN_STEPS`] are counted and read past, never built: an answer with more is no
//! plan whatever they hold (the count is kept in the plan's answer and the import says so).
//! Each kept call's arguments are a value only while that call is read, then the text a live
//! reply carries (`ToolCall::arguments`), as before.
//!
//! What a value of another shape than expected gives is what the tree reading gave: a
//! message list that is not a list, or an item that is not an object, is an error naming the
//! record and the field; elsewhere a value of another shape is taken as absent.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{KeyIn, KeysOnce, Skip, content_error};
use crate::core::bounds;
use crate::core::error::CoreError;
use crate::core::failure::{
    OtherContent, ToolCall, content_of_other_type, content_part, index_value,
    reasoning_details_text,
};
use crate::core::json_keys::UniqueValue;

/// The key under which serde_json (with `arbitrary_precision`) hands a number to a visitor:
/// a one-entry map, the number's text its value.
const NUMBER: &str = "$serde_json::private::Number";

/// A visitor's scalars (not null) as `self.scalar(shown)`: the value as an error shows it.
macro_rules! scalars_shown {
    () => {
        fn visit_bool<Er: de::Error>(self, v: bool) -> Result<Self::Value, Er> {
            Ok(self.scalar(shown(&Value::Bool(v))))
        }
        fn visit_i64<Er: de::Error>(self, v: i64) -> Result<Self::Value, Er> {
            Ok(self.scalar(shown(&Value::from(v))))
        }
        fn visit_u64<Er: de::Error>(self, v: u64) -> Result<Self::Value, Er> {
            Ok(self.scalar(shown(&Value::from(v))))
        }
        fn visit_i128<Er: de::Error>(self, v: i128) -> Result<Self::Value, Er> {
            Ok(self.scalar(clipped(&v.to_string())))
        }
        fn visit_u128<Er: de::Error>(self, v: u128) -> Result<Self::Value, Er> {
            Ok(self.scalar(clipped(&v.to_string())))
        }
        fn visit_f64<Er: de::Error>(self, v: f64) -> Result<Self::Value, Er> {
            Ok(self.scalar(shown(&Value::from(v))))
        }
        fn visit_str<Er: de::Error>(self, v: &str) -> Result<Self::Value, Er> {
            Ok(self.scalar(shown(&Value::String(v.to_string()))))
        }
    };
}

/// What a value is, for an error: `42`, `"text"` (clipped), `an object`, `a list`.
pub(super) fn shown(v: &Value) -> String {
    match v {
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "a list".into(),
        other => clipped(&other.to_string()),
    }
}

fn clipped(text: &str) -> String {
    crate::core::text::clip(text, 40)
}

/// What reads a recorded value ([`Recorded`]): a visitor of it, and a seed for its text.
pub(super) trait Reads<T>:
    for<'x> Visitor<'x, Value = Option<T>> + for<'x> DeserializeSeed<'x, Value = Option<T>>
{
}

impl<T, S> Reads<T> for S where
    S: for<'x> Visitor<'x, Value = Option<T>> + for<'x> DeserializeSeed<'x, Value = Option<T>>
{
}

/// A JSON value recorded as itself or as its JSON text (a spend log column, the proxy's
/// database export writing them as text; a span attribute, most instrumentations writing
/// them as strings), read by `seed` ([`Recorded`]) from a value already read.
pub(super) fn read_recorded<T, S>(
    position: &str,
    what: &str,
    v: Option<&Value>,
    seed: S,
) -> Result<Option<T>, CoreError>
where
    S: Reads<T>,
{
    let Some(v) = v else {
        return Ok(None);
    };
    Recorded::new(position, what, seed)
        .deserialize(v)
        .map_err(|e| content_error(position.to_string(), format!("{what}: {e}")))?
}

/// A JSON value recorded as itself or as its JSON text, read by `seed` as the parser
/// reaches it: a value is `seed`'s to read; a string is JSON text, parsed by `seed` (never a
/// tree of it, never a copy of the text). Null and empty text are `None`, and so is what
/// `seed` takes for the empty placeholder (`{}`, `[]`: content not stored); text that is not
/// JSON is an error naming the position and `what` (`field 'messages'`, `attribute
/// 'gen_ai.input.messages'`), never passed over: kept as the read's value, for its reader to
/// raise where it reads that field.
pub(super) struct Recorded<'p, T, S> {
    position: &'p str,
    what: &'p str,
    seed: S,
    read: std::marker::PhantomData<fn() -> T>,
}

impl<'p, T, S: Reads<T>> Recorded<'p, T, S> {
    pub(super) fn new(position: &'p str, what: &'p str, seed: S) -> Self {
        Recorded {
            position,
            what,
            seed,
            read: std::marker::PhantomData,
        }
    }
}

impl<'de, T, S> DeserializeSeed<'de> for Recorded<'_, T, S>
where
    S: Reads<T>,
{
    type Value = Result<Option<T>, CoreError>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T, S> Visitor<'de> for Recorded<'_, T, S>
where
    S: Reads<T>,
{
    type Value = Result<Option<T>, CoreError>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.seed.expecting(f)
    }

    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok(Ok(None))
    }

    fn visit_str<Er: de::Error>(self, text: &str) -> Result<Self::Value, Er> {
        if text.trim().is_empty() {
            return Ok(Ok(None));
        }
        let mut de = serde_json::Deserializer::from_str(text);
        Ok(self
            .seed
            .deserialize(&mut de)
            .and_then(|read| de.end().map(|()| read))
            .map_err(|e| CoreError::json_within(self.position, self.what, text, &e)))
    }

    fn visit_bool<Er: de::Error>(self, v: bool) -> Result<Self::Value, Er> {
        self.seed.visit_bool(v).map(Ok)
    }

    fn visit_i64<Er: de::Error>(self, v: i64) -> Result<Self::Value, Er> {
        self.seed.visit_i64(v).map(Ok)
    }

    fn visit_u64<Er: de::Error>(self, v: u64) -> Result<Self::Value, Er> {
        self.seed.visit_u64(v).map(Ok)
    }

    fn visit_i128<Er: de::Error>(self, v: i128) -> Result<Self::Value, Er> {
        self.seed.visit_i128(v).map(Ok)
    }

    fn visit_u128<Er: de::Error>(self, v: u128) -> Result<Self::Value, Er> {
        self.seed.visit_u128(v).map(Ok)
    }

    fn visit_f64<Er: de::Error>(self, v: f64) -> Result<Self::Value, Er> {
        self.seed.visit_f64(v).map(Ok)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.seed.visit_seq(seq).map(Ok)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.seed.visit_map(map).map(Ok)
    }
}

/// A string value, or `None` for any other (read through).
struct StrOrNone;

impl<'de> DeserializeSeed<'de> for StrOrNone {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrOrNone {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    scalars_otherwise!(None);
    seq_otherwise!(None);
    map_otherwise!(None);

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<Self::Value, Er> {
        Ok(Some(v.to_string()))
    }

    fn visit_string<Er: de::Error>(self, v: String) -> Result<Self::Value, Er> {
        Ok(Some(v))
    }
}

/// The text of a message's content (OpenAI `content`, GenAI `parts`): a string, or the text
/// parts of a list (each part's `content`, else its `text`) joined in order by the one rule
/// for parts, [`content_part`], as an answer's are: nothing between them (the parts of one
/// message are pieces of one text; a line break had been put between them), a part of
/// another type left out; `None` for anything else, or a list without a text part.
pub(super) struct TextOf;

impl<'de> DeserializeSeed<'de> for TextOf {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextOf {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message's content")
    }

    scalars_otherwise!(None);
    map_otherwise!(None);

    fn visit_str<Er: de::Error>(self, v: &str) -> Result<Self::Value, Er> {
        Ok(Some(v.to_string()))
    }

    fn visit_string<Er: de::Error>(self, v: String) -> Result<Self::Value, Er> {
        Ok(Some(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut text, mut read) = (String::new(), false);
        // What the parts held and was not read: an intent keeps no note of it.
        let mut not_read = Vec::new();
        while let Some((kind, part)) = seq.next_element_seed(PartText)? {
            read |= content_part(kind.as_deref(), part.as_deref(), &mut text, &mut not_read);
        }
        Ok(read.then_some(text))
    }
}

/// One part of a content list: its `type`, and its `content` when it has one (and that is
/// a string), else its `text` (each `None` when absent or not a string; both for a part
/// that is not an object), for [`content_part`].
struct PartText;

impl<'de> DeserializeSeed<'de> for PartText {
    type Value = (Option<String>, Option<String>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PartText {
    type Value = (Option<String>, Option<String>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a part")
    }

    otherwise!((None, None));
    seq_otherwise!((None, None));

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut kind, mut content, mut text) = (None, None, None);
        let mut keys = KeysOnce::of(&["type", "content", "text"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => kind = map.next_value_seed(StrOrNone)?,
                Some(1) => content = Some(map.next_value_seed(StrOrNone)?),
                Some(_) => text = Some(map.next_value_seed(StrOrNone)?),
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        let text = match content {
            Some(content) => content,
            None => text.flatten(),
        };
        Ok((kind, text))
    }
}

/// A chat completion message's `content`, read as a live answer's is
/// ([`content_of`](crate::core::failure::content_of)): a string, or the text parts of a list
/// joined in order ([`content_part`], the one rule for both), with what was not read — other
/// parts, content of another type — named as a live reply names it.
struct AnswerContent;

/// The text, and what was not read.
type ContentRead = (Option<String>, Vec<String>);

fn content_of_other(other: OtherContent) -> ContentRead {
    let mut not_read = Vec::new();
    content_of_other_type(other, &mut not_read);
    (None, not_read)
}

impl<'de> DeserializeSeed<'de> for AnswerContent {
    type Value = ContentRead;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnswerContent {
    type Value = ContentRead;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message's content")
    }

    fn visit_bool<Er: de::Error>(self, _: bool) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Boolean))
    }
    fn visit_i64<Er: de::Error>(self, _: i64) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Number))
    }
    fn visit_u64<Er: de::Error>(self, _: u64) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Number))
    }
    fn visit_i128<Er: de::Error>(self, _: i128) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Number))
    }
    fn visit_u128<Er: de::Error>(self, _: u128) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Number))
    }
    fn visit_f64<Er: de::Error>(self, _: f64) -> Result<Self::Value, Er> {
        Ok(content_of_other(OtherContent::Number))
    }
    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok((None, Vec::new()))
    }
    fn visit_str<Er: de::Error>(self, v: &str) -> Result<Self::Value, Er> {
        Ok((Some(v.to_string()), Vec::new()))
    }
    fn visit_string<Er: de::Error>(self, v: String) -> Result<Self::Value, Er> {
        Ok((Some(v), Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // A number the parser hands over as a map (`arbitrary_precision`), else an object.
        let other = match map.next_key_seed(KeyIn(&[NUMBER]))? {
            None => return Ok(content_of_other(OtherContent::Object)),
            Some(Some(_)) => OtherContent::Number,
            Some(None) => OtherContent::Object,
        };
        map.next_value::<Skip>()?;
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(content_of_other(other))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut text, mut not_read) = (String::new(), Vec::new());
        while let Some((kind, part_text)) = seq.next_element_seed(ContentPart)? {
            content_part(
                kind.as_deref(),
                part_text.as_deref(),
                &mut text,
                &mut not_read,
            );
        }
        Ok((Some(text), not_read))
    }
}

/// One part of an answer's content list: its `type` and `text` (each `None` when absent or
/// not a string; both for a part that is not an object), for [`content_part`].
struct ContentPart;

impl<'de> DeserializeSeed<'de> for ContentPart {
    type Value = (Option<String>, Option<String>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentPart {
    type Value = (Option<String>, Option<String>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a part")
    }

    otherwise!((None, None));
    seq_otherwise!((None, None));

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut kind, mut text) = (None, None);
        let mut keys = KeysOnce::of(&["type", "text"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => kind = map.next_value_seed(StrOrNone)?,
                Some(_) => text = map.next_value_seed(StrOrNone)?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok((kind, text))
    }
}

// ---------------------------------------------------------------------------------------
// Input: the user's intent

/// A message list as the intent reads it.
#[derive(Debug)]
pub(super) enum Input {
    /// A list of messages: the text of its last user message that has any (untrimmed).
    Messages(Option<String>),
    /// Not a list: the value as shown.
    NotAList(String),
    /// Item `n` (1-based) is not a message: the first such, as shown.
    NotAMessage(usize, String),
}

/// A message list (OpenAI `content`, or GenAI `parts`), read for its last user message's
/// text; `None` for the placeholders (null, `{}`, `[]`).
pub(super) struct InputMessages;

impl<'de> DeserializeSeed<'de> for InputMessages {
    type Value = Option<Input>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl InputMessages {
    fn scalar(self, shown: String) -> Option<Input> {
        Some(Input::NotAList(shown))
    }
}

impl<'de> Visitor<'de> for InputMessages {
    type Value = Option<Input>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of messages")
    }

    scalars_shown!();

    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let shown = match map.next_key_seed(KeyIn(&[NUMBER]))? {
            None => return Ok(None),
            Some(Some(_)) => clipped(&map.next_value::<String>()?),
            Some(None) => {
                map.next_value::<Skip>()?;
                "an object".to_string()
            }
        };
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Some(Input::NotAList(shown)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = 0usize;
        let mut last = None;
        while let Some(item) = seq.next_element_seed(InputMessage)? {
            items += 1;
            match item {
                Item::Message { user, text } => {
                    if user && text.is_some() {
                        last = text;
                    }
                }
                Item::Not(shown) => {
                    // The first is told; the rest is still read (checked as JSON).
                    while seq.next_element::<Skip>()?.is_some() {}
                    return Ok(Some(Input::NotAMessage(items, shown)));
                }
            }
        }
        Ok((items > 0).then_some(Input::Messages(last)))
    }
}

/// One item of an input message list.
enum Item {
    /// A message: whether its role is `user`, and its text.
    Message { user: bool, text: Option<String> },
    /// Not an object: as shown.
    Not(String),
}

struct InputMessage;

impl<'de> DeserializeSeed<'de> for InputMessage {
    type Value = Item;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl InputMessage {
    fn scalar(self, shown: String) -> Item {
        Item::Not(shown)
    }
}

impl<'de> Visitor<'de> for InputMessage {
    type Value = Item;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message")
    }

    scalars_shown!();

    fn visit_unit<Er: de::Error>(self) -> Result<Self::Value, Er> {
        Ok(Item::Not(shown(&Value::Null)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Item::Not("a list".to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut role = None;
        // `content` when the message has it (whatever it holds), else `parts`.
        let (mut content, mut parts) = (None, None);
        let mut keys = KeysOnce::of(&["role", "content", "parts", NUMBER]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => role = map.next_value_seed(StrOrNone)?,
                Some(1) => content = Some(map.next_value_seed(TextOf)?),
                Some(2) => parts = Some(map.next_value_seed(TextOf)?),
                Some(_) => {
                    let number = map.next_value::<String>()?;
                    while map.next_entry::<Skip, Skip>()?.is_some() {}
                    return Ok(Item::Not(clipped(&number)));
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(Item::Message {
            user: role.as_deref() == Some("user"),
            text: match content {
                Some(text) => text,
                None => parts.flatten(),
            },
        })
    }
}

// ---------------------------------------------------------------------------------------
// Tool calls

/// An answer's tool calls, in order: the first [`bounds::PLAN_STEPS`] kept, the rest
/// counted and read past.
#[derive(Debug, Default)]
pub(super) struct Calls {
    pub kept: Vec<ToolCall>,
    pub not_kept: usize,
}

impl Calls {
    /// Whether another call would be past the bound (read past, its arguments not built).
    fn full(&self) -> bool {
        self.kept.len() >= bounds::PLAN_STEPS
    }

    fn push(&mut self, call: ToolCall) {
        if self.full() {
            self.not_kept += 1;
        } else {
            self.kept.push(call);
        }
    }
}

/// A call's arguments as a live reply carries them: the text as written when they are a
/// string, none when absent or null, else the value written out as JSON.
fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        Some(Value::String(s)) => s,
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// A call's arguments: the value, or read past (`None`) when the call is not kept.
fn arguments<'de, A: MapAccess<'de>>(map: &mut A, keep: bool) -> Result<Option<Value>, A::Error> {
    if keep {
        map.next_value_seed(UniqueValue).map(Some)
    } else {
        map.next_value::<Skip>().map(|_| None)
    }
}

// ---------------------------------------------------------------------------------------
// Output: a GenAI output message list (OpenTelemetry)

/// What a GenAI output message list holds, read as a live reply is: its first message is
/// the answer (the conventions make each message one response of the model, a choice; a
/// live reply keeps choice 0) — its text (its text parts joined in order, by the one rule
/// for parts, [`content_part`]), its reasoning (its `reasoning` parts, joined so too), its
/// finish reason, its tool calls, and what its parts held and was not read (a part that is
/// neither text, reasoning nor a tool call), as a live reply's `not_read` names it; the
/// messages past the first are read past and counted, as a live reply's `other_choices`.
#[derive(Debug, Default)]
pub(super) struct Output {
    pub text: Option<String>,
    pub reasoning: Option<String>,
    pub finish_reason: Option<String>,
    pub calls: Calls,
    pub not_read: Vec<String>,
    pub other_choices: u32,
}

/// `gen_ai.output.messages`: a list of `{role, parts, finish_reason}`; `None` for the
/// placeholders and for a value that is not a list (no output recorded).
pub(super) struct OutputMessages;

impl<'de> DeserializeSeed<'de> for OutputMessages {
    type Value = Option<Output>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OutputMessages {
    type Value = Option<Output>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of messages")
    }

    otherwise!(None);
    map_otherwise!(None);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Output::default();
        if seq.next_element_seed(OutputMessage(&mut out))?.is_none() {
            return Ok(None);
        }
        // The other choices: read past (still checked as JSON), counted.
        let mut others = 0usize;
        while seq.next_element::<Skip>()?.is_some() {
            others += 1;
        }
        out.other_choices = u32::try_from(others).unwrap_or(u32::MAX);
        Ok(Some(out))
    }
}

struct OutputMessage<'a>(&'a mut Output);

impl<'de> DeserializeSeed<'de> for OutputMessage<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OutputMessage<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message")
    }

    otherwise!(());
    seq_otherwise!(());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = KeysOnce::of(&["finish_reason", "parts"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => self.0.finish_reason = map.next_value_seed(StrOrNone)?,
                Some(_) => map.next_value_seed(OutputParts(&mut *self.0))?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(())
    }
}

/// A message's `parts`: text parts into its `text` (`None` until one is read), reasoning
/// parts into its `reasoning`, tool calls, and any other part named as not read, each
/// taken as read.
struct OutputParts<'a>(&'a mut Output);

impl<'de> DeserializeSeed<'de> for OutputParts<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OutputParts<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of parts")
    }

    otherwise!(());
    map_otherwise!(());

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        loop {
            let keep = !out.calls.full();
            match seq.next_element_seed(OutputPart { keep })? {
                None => return Ok(()),
                Some(Part::Call(call)) => out.calls.push(call),
                Some(Part::Reasoning(reasoning)) => out
                    .reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&reasoning),
                Some(Part::Other { kind, content }) => {
                    // Until a text part is read the message has no text (rather than an
                    // empty one).
                    let had = out.text.is_some();
                    let mut text = out.text.take().unwrap_or_default();
                    let read = content_part(
                        kind.as_deref(),
                        content.as_deref(),
                        &mut text,
                        &mut out.not_read,
                    );
                    if read || had {
                        out.text = Some(text);
                    }
                }
            }
        }
    }
}

/// One part as read: a tool call, a reasoning part's text, or any other part by its `type`
/// and its `content` (where a GenAI part keeps its text), for [`content_part`]; a part that
/// is not an object has neither.
enum Part {
    Call(ToolCall),
    Reasoning(String),
    Other {
        kind: Option<String>,
        content: Option<String>,
    },
}

/// The part that is not an object: named as not read, as a content part of no type is.
const NOT_AN_OBJECT: Part = Part::Other {
    kind: None,
    content: None,
};

/// One part: `{"type":"tool_call","id","name","arguments"}` a call (its arguments kept as a
/// value while read only when `keep`); `{"type":"reasoning","content":…}` the message's
/// reasoning, as a live reply's `reasoning_content` is (one without text content is named
/// as not read); any other part read by [`content_part`]: `{"type":"text","content":…}` is
/// text, anything else (`blob`, `uri`, `file`, a part that is not an object, …) is named as
/// not read.
///
/// A message's text parts are joined with nothing between them, as a live answer's content
/// parts are: the GenAI conventions make `parts` the pieces of one message, in order, and
/// set no separator; an instrumentation that records an answer as several text parts (a
/// stream's chunks, a provider's content blocks) splits one text, and a line break put
/// between them broke a plan split inside a string.
struct OutputPart {
    keep: bool,
}

impl<'de> DeserializeSeed<'de> for OutputPart {
    type Value = Part;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Part, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OutputPart {
    type Value = Part;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a part")
    }

    otherwise!(NOT_AN_OBJECT);
    seq_otherwise!(NOT_AN_OBJECT);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        let (mut kind, mut content, mut id, mut name, mut args) = (None, None, None, None, None);
        let mut keys = KeysOnce::of(&["type", "content", "id", "name", "arguments"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => kind = map.next_value_seed(StrOrNone)?,
                Some(1) => content = map.next_value_seed(StrOrNone)?,
                Some(2) => id = map.next_value_seed(StrOrNone)?,
                Some(3) => name = map.next_value_seed(StrOrNone)?,
                Some(_) => args = arguments(&mut map, self.keep)?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(match (kind.as_deref(), content) {
            (Some("tool_call"), _) => Part::Call(ToolCall {
                id,
                name: name.unwrap_or_default(),
                arguments: arguments_text(args),
            }),
            (Some("reasoning"), Some(reasoning)) => Part::Reasoning(reasoning),
            (_, content) => Part::Other { kind, content },
        })
    }
}

// ---------------------------------------------------------------------------------------
// Output: a chat completion (a LiteLLM spend log's `response`)

/// A chat completion's choice at `index` 0, as a live reply keeps it.
#[derive(Debug)]
pub(super) struct Choice {
    /// Its `index` ([`index_value`]: a missing one is 0).
    pub index: Option<u64>,
    pub finish_reason: Option<String>,
    pub message: Option<ChoiceMessage>,
    /// The other choices, counted, as a live reply's `other_choices`.
    pub other_choices: u32,
}

impl Default for Choice {
    /// A choice with nothing read: at index 0, as a live reply reads one without `index`.
    fn default() -> Choice {
        Choice {
            index: Some(0),
            finish_reason: None,
            message: None,
            other_choices: 0,
        }
    }
}

/// A choice's message: what a live reply reads of one.
#[derive(Debug, Default)]
pub(super) struct ChoiceMessage {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub refusal: Option<String>,
    pub calls: Calls,
    /// What the content held and was not read ([`AnswerContent`]), as a live reply's
    /// `not_read` names it.
    pub not_read: Vec<String>,
}

/// A chat completion (`{"choices":[{"message":…, "finish_reason":…}]}`): its choice at
/// index 0; `None` when it has none (or is a placeholder, or of another shape).
pub(super) struct Completion;

impl<'de> DeserializeSeed<'de> for Completion {
    type Value = Option<Choice>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Completion {
    type Value = Option<Choice>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a chat completion")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut choice = None;
        let mut keys = KeysOnce::of(&["choices"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(_) => choice = map.next_value_seed(FirstChoice)?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(choice)
    }
}

/// `choices`: the first at `index` 0 (one that is not an object is a choice at 0 without a
/// message), the others counted: a live reply's rule (`reply_from_body`), not the first
/// listed. With none at index 0 it is a choice without a message, and all are others.
struct FirstChoice;

impl<'de> DeserializeSeed<'de> for FirstChoice {
    type Value = Option<Choice>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FirstChoice {
    type Value = Option<Choice>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of choices")
    }

    otherwise!(None);
    map_otherwise!(None);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept: Option<Choice> = None;
        let mut listed = 0usize;
        while let Some(choice) = seq.next_element_seed(ChoiceOf)? {
            listed += 1;
            if kept.is_none() && choice.index == Some(0) {
                kept = Some(choice);
            }
        }
        if listed == 0 {
            return Ok(None);
        }
        let others = listed - usize::from(kept.is_some());
        let mut choice = kept.unwrap_or(Choice {
            index: None,
            ..Choice::default()
        });
        choice.other_choices = u32::try_from(others).unwrap_or(u32::MAX);
        Ok(Some(choice))
    }
}

struct ChoiceOf;

impl<'de> DeserializeSeed<'de> for ChoiceOf {
    type Value = Choice;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChoiceOf {
    type Value = Choice;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a choice")
    }

    otherwise!(Choice::default());
    seq_otherwise!(Choice::default());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut choice = Choice::default();
        let mut keys = KeysOnce::of(&["message", "finish_reason", "index"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => choice.message = map.next_value_seed(MessageOf)?,
                Some(1) => choice.finish_reason = map.next_value_seed(StrOrNone)?,
                Some(_) => choice.index = index_value(Some(&map.next_value_seed(UniqueValue)?)),
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(choice)
    }
}

/// A choice's `message`; `None` when it is not an object.
struct MessageOf;

impl<'de> DeserializeSeed<'de> for MessageOf {
    type Value = Option<ChoiceMessage>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MessageOf {
    type Value = Option<ChoiceMessage>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = ChoiceMessage::default();
        // Whether `tool_calls` was a list, and the legacy `function_call`.
        let (mut listed, mut legacy) = (false, None);
        // The reasoning as each field gives it; kept in a live reply's order of preference.
        let (mut content_field, mut plain_field, mut details) = (None, None, None);
        let mut keys = KeysOnce::of(&[
            "content",
            "reasoning_content",
            "refusal",
            "tool_calls",
            "function_call",
            "reasoning",
            "reasoning_details",
        ]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => (m.content, m.not_read) = map.next_value_seed(AnswerContent)?,
                Some(1) => content_field = map.next_value_seed(StrOrNone)?,
                Some(2) => m.refusal = map.next_value_seed(StrOrNone)?,
                Some(3) => {
                    listed = map.next_value_seed(CallList(&mut m.calls))?;
                }
                Some(4) => legacy = map.next_value_seed(FunctionOf { keep: true })?,
                Some(5) => plain_field = map.next_value_seed(StrOrNone)?,
                Some(_) => details = reasoning_details_text(&map.next_value_seed(UniqueValue)?),
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        m.reasoning = content_field.or(plain_field).or(details);
        // Without a list of tool calls, a legacy `function_call` object is one call, as a
        // live answer reads it (`tool_calls_of`).
        if !listed && let Some((name, args)) = legacy {
            m.calls.push(ToolCall {
                id: None,
                name: name.unwrap_or_default(),
                arguments: arguments_text(args),
            });
        }
        Ok(Some(m))
    }
}

/// A message's `tool_calls`: each taken as read.
struct CallList<'a>(&'a mut Calls);

impl<'de> DeserializeSeed<'de> for CallList<'_> {
    /// Whether it was a list.
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CallList<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of tool calls")
    }

    otherwise!(false);
    map_otherwise!(false);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        loop {
            let keep = !self.0.full();
            match seq.next_element_seed(CallOf { keep })? {
                Some(call) => self.0.push(call),
                None => return Ok(true),
            }
        }
    }
}

/// One tool call, `{"id", "function": {"name", "arguments"}}` (or the name and arguments
/// beside the id); any other value is a call without a name. Its arguments are read past
/// when it is not kept.
struct CallOf {
    keep: bool,
}

impl<'de> DeserializeSeed<'de> for CallOf {
    type Value = ToolCall;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A call without an id, a name or arguments.
fn unnamed() -> ToolCall {
    ToolCall {
        id: None,
        name: String::new(),
        arguments: String::new(),
    }
}

impl<'de> Visitor<'de> for CallOf {
    type Value = ToolCall;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a tool call")
    }

    otherwise!(unnamed());
    seq_otherwise!(unnamed());

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut id, mut function, mut name, mut args) = (None, None, None, None);
        let mut keys = KeysOnce::of(&["id", "function", "name", "arguments"]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => id = map.next_value_seed(StrOrNone)?,
                Some(1) => {
                    let read = map.next_value_seed(FunctionOf { keep: self.keep })?;
                    function = Some(read.unwrap_or((None, None)));
                }
                Some(2) => name = map.next_value_seed(StrOrNone)?,
                Some(_) => args = arguments(&mut map, self.keep)?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        // The function's name and arguments when the call has a `function`, whatever it is.
        let (name, args) = function.unwrap_or((name, args));
        Ok(ToolCall {
            id,
            name: name.unwrap_or_default(),
            arguments: arguments_text(args),
        })
    }
}

/// A call's `function` (or a message's legacy `function_call`): its name and arguments;
/// `None` when it is not an object.
struct FunctionOf {
    keep: bool,
}

type NameAndArguments = (Option<String>, Option<Value>);

impl<'de> DeserializeSeed<'de> for FunctionOf {
    type Value = Option<NameAndArguments>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FunctionOf {
    type Value = Option<NameAndArguments>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a function")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut args) = (None, None);
        let mut keys = KeysOnce::of(&["name", "arguments", NUMBER]);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(0) => name = map.next_value_seed(StrOrNone)?,
                Some(1) => args = arguments(&mut map, self.keep)?,
                // A number the parser hands over as a map: not an object.
                Some(_) => {
                    map.next_value::<Skip>()?;
                    return Ok(None);
                }
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(Some((name, args)))
    }
}

// ---------------------------------------------------------------------------------------
// One string field of an object (a spend log's `metadata`)

/// The string `.0` of an object; `None` when it is absent, not a string, or the value is
/// not an object.
pub(super) struct StrField(pub &'static str);

impl<'de> DeserializeSeed<'de> for StrField {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrField {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    otherwise!(None);
    seq_otherwise!(None);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut field = None;
        let names = [self.0];
        let mut keys = KeysOnce::of(&names);
        while let Some(key) = keys.next(&mut map)? {
            match key {
                Some(_) => field = map.next_value_seed(StrOrNone)?,
                None => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(field)
    }
}
