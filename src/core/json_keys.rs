//! A key given twice in one JSON object. JSON leaves it to the reader — serde_json's `Value`
//! keeps the last copy, jq's `first`, many log viewers and Postgres `json` the first — so a
//! text holding one says two things, and what ctxconsole stores or does could differ from
//! what an operator's tools show (testers 31 F1, 33 F3, F5). Readers that build a `Value`
//! from outside text read it through [`UniqueValue`] (refused at the repeated key) or ask
//! [`first_repeated_key`] where the first one is.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The key under which serde_json (with `arbitrary_precision`, as this crate builds it)
/// hands a number to a visitor: a one-entry map, the number's text its value.
const NUMBER: &str = "$serde_json::private::Number";

/// A JSON value read as `Value` is, but refused — `duplicate field `k`` — at the first key
/// given twice in any of its objects, at any depth.
#[derive(Clone, Copy)]
pub struct UniqueValue;

impl<'de> DeserializeSeed<'de> for UniqueValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueValue {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(UniqueValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.is_empty() && key == NUMBER {
                let text: String = map.next_value()?;
                return text
                    .parse::<serde_json::Number>()
                    .map(Value::Number)
                    .map_err(de::Error::custom);
            }
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate field `{}`",
                    crate::core::text::clip(&key, crate::core::terminal_text::QUOTE_CHARS)
                )));
            }
            let value = map.next_value_seed(UniqueValue)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A path as the other argument errors write one: `attachments[0].text` (tester 27 F8: the
/// cut read `attachments.[].text`).
pub fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}

/// Where `text` gives a key twice, as an answer's `not_read` notes it — `` `choices[0].message.content`
/// given twice in the body: the last copy is read `` — for a reader that keeps the last copy
/// rather than refuse what it read (a live answer is kept whole and said, never dropped).
/// `None` when no key repeats.
pub fn repeat_note(text: &[u8], within: &str) -> Option<String> {
    let path = first_repeated_key(text)?;
    Some(format!(
        "`{}` given twice {within}: the last copy is read (a proxy or log keeping the first \
         shows another)",
        crate::core::text::clip(&dotted(&path), crate::core::terminal_text::QUOTE_CHARS)
    ))
}

/// What kind of JSON value `v` is, as a message names it: `null`, `a boolean`, `a number`,
/// `a string`, `an array`, `an object`.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where the first key given twice in `text` is: the keys leading to it and the key itself
/// (`["params", "arguments", "ok"]`; an array's item is `[N]`, from 0). `None` when no key
/// repeats, or when `text` is not JSON (its reader says why).
pub fn first_repeated_key(text: &[u8]) -> Option<Vec<String>> {
    let mut path = Vec::new();
    let mut found = None;
    let mut d = serde_json::Deserializer::from_slice(text);
    // The walk ends in an error once a repeat is found (or when the text is no JSON).
    let _ = PathSeed {
        path: &mut path,
        found: &mut found,
    }
    .deserialize(&mut d);
    found
}

/// One value being walked at `path`; the first repeat goes to `found`, and the walk stops.
struct PathSeed<'a> {
    path: &'a mut Vec<String>,
    found: &'a mut Option<Vec<String>>,
}

/// What stops the walk once a repeat is found (the error is never shown).
const FOUND: &str = "a key is given twice";

impl<'de> DeserializeSeed<'de> for PathSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PathSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            self.path.push(format!("[{index}]"));
            let item = seq.next_element_seed(PathSeed {
                path: &mut *self.path,
                found: &mut *self.found,
            })?;
            self.path.pop();
            if item.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.is_empty() && key == NUMBER {
                map.next_value::<de::IgnoredAny>()?;
                return Ok(());
            }
            if !seen.insert(key.clone()) {
                let mut at = self.path.clone();
                at.push(key);
                *self.found = Some(at);
                return Err(de::Error::custom(FOUND));
            }
            self.path.push(key);
            map.next_value_seed(PathSeed {
                path: &mut *self.path,
                found: &mut *self.found,
            })?;
            self.path.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(text: &str) -> Result<Value, serde_json::Error> {
        UniqueValue.deserialize(&mut serde_json::Deserializer::from_str(text))
    }

    #[test]
    fn a_value_reads_as_serde_json_reads_it_unless_a_key_repeats() {
        for text in [
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":18446744073709551615}"#,
            r#"{"n":123456789012345678901234567890.000000000000000000001}"#,
            "[]",
            "\"s\"",
        ] {
            let want: Value = serde_json::from_str(text).unwrap();
            assert_eq!(unique(text).unwrap(), want, "{text}");
        }
        let e = unique(r#"{"a":{"b":[{"k":1,"k":2}]}}"#).unwrap_err();
        assert!(e.to_string().starts_with("duplicate field `k`"), "{e}");
        // The same key in two objects is no repeat.
        assert!(unique(r#"[{"k":1},{"k":2}]"#).is_ok());
    }

    #[test]
    fn the_first_repeat_is_found_by_its_path() {
        let at = |text: &str| first_repeated_key(text.as_bytes());
        assert_eq!(at(r#"{"a":1,"b":{"c":[1,{"d":1}]}}"#), None);
        assert_eq!(
            at(r#"{"params":{"arguments":{"ok":true,"ok":false}}}"#),
            Some(vec!["params".into(), "arguments".into(), "ok".into()])
        );
        assert_eq!(
            at(r#"{"a":[{"x":1},{"y":1,"y":2}],"b":1,"b":2}"#),
            Some(vec!["a".into(), "[1]".into(), "y".into()])
        );
        assert_eq!(at(r#"{"id":1,"id":2}"#), Some(vec!["id".into()]));
        assert_eq!(at("not json"), None);
    }
}
