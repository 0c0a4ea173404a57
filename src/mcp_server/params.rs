//! Reading a tool's arguments: every argument is checked for presence, type and size, and a
//! bad one is an `invalid_params` error naming it. Nothing here panics on what a client sends.

use rmcp::ErrorData;
use rmcp::model::JsonObject;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::core::time::parse_timestamp;

/// The most one text argument may hold (an instruction, an attachment's text, a catalog, a
/// prompt): a big paste fits, and a reply built from it still fits in what a client reads.
pub const TEXT_MAX: usize = 8 * 1024 * 1024;
/// The most a name or id may hold (model, caller, tool, plan id, session, attachment name):
/// the one name rule's bound.
pub const NAME_MAX: usize = crate::core::bounds::NAME_BYTES;
/// The most attachments one preview takes.
pub const ATTACHMENTS_MAX: usize = 32;
/// The most ranked entries `rank_tools` returns.
pub const K_MAX: u64 = 100;

/// A bad argument: `invalid_params`, the argument named in the message and in `data`.
pub fn bad(tool: &str, argument: &str, problem: impl std::fmt::Display) -> ErrorData {
    // An argument's name is the client's text: one over the name bound is named by its
    // opening, as an unknown resource URI is (review 42: a long key came back whole).
    let argument = crate::core::text::opening(argument, NAME_MAX);
    ErrorData::invalid_params(
        format!("{tool}: argument `{argument}` {problem}"),
        Some(json!({ "tool": tool, "argument": argument })),
    )
}

/// One tool call's arguments, read one by one.
pub struct Params<'a> {
    tool: &'a str,
    map: &'a JsonObject,
}

use crate::core::json_keys::kind as type_name;

/// `8 MiB`, `512 bytes`.
pub fn size_label(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{} bytes", crate::format::thousands(bytes))
    }
}

/// A string within `max` bytes; `what` names it in errors (`attachments[2].text`).
fn string_within<'v>(
    tool: &str,
    what: &str,
    v: &'v Value,
    max: usize,
) -> Result<&'v str, ErrorData> {
    let Some(s) = v.as_str() else {
        return Err(bad(
            tool,
            what,
            format!("must be a string, not {}", type_name(v)),
        ));
    };
    if s.len() > max {
        return Err(bad(
            tool,
            what,
            format!(
                "is {} bytes; the limit is {}",
                crate::format::thousands(s.len()),
                size_label(max)
            ),
        ));
    }
    Ok(s)
}

impl<'a> Params<'a> {
    /// Refuses arguments the tool does not take, so a misspelt one is not silently ignored.
    pub fn new(tool: &'a str, map: &'a JsonObject, known: &[&str]) -> Result<Self, ErrorData> {
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(bad(
                tool,
                unknown,
                format!(
                    "is not an argument of {tool} (it takes {})",
                    known.join(", ")
                ),
            ));
        }
        Ok(Params { tool, map })
    }

    pub fn error(&self, argument: &str, problem: impl std::fmt::Display) -> ErrorData {
        bad(self.tool, argument, problem)
    }

    /// Present and not null.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub fn opt_str(&self, name: &str, max: usize) -> Result<Option<&'a str>, ErrorData> {
        self.get(name)
            .map(|v| string_within(self.tool, name, v, max))
            .transpose()
    }

    pub fn str(&self, name: &str, max: usize) -> Result<&'a str, ErrorData> {
        self.opt_str(name, max)?
            .ok_or_else(|| self.error(name, "is required"))
    }

    /// A required string with something other than white space in it.
    pub fn non_empty(&self, name: &str, max: usize) -> Result<&'a str, ErrorData> {
        let s = self.str(name, max)?;
        if s.trim().is_empty() {
            return Err(self.empty(name));
        }
        Ok(s)
    }

    /// The error for a required text with nothing but white space in it.
    pub fn empty(&self, name: &str) -> ErrorData {
        self.error(name, "is empty")
    }

    /// A required name (a caller, a tool) within [`NAME_MAX`], under the one name rule
    /// ([`name_problem`](crate::core::budget::name_problem)): a name the store would refuse
    /// is a bad argument, named as one, not the store's refusal of a line.
    pub fn name(&self, name: &str) -> Result<&'a str, ErrorData> {
        let s = self.str(name, NAME_MAX)?;
        match crate::core::budget::name_problem(s) {
            Some(problem) => Err(self.error(name, problem)),
            None => Ok(s),
        }
    }

    /// An optional name: absent, or a string within [`NAME_MAX`] under the one name rule
    /// (`core::budget::name_problem`), as the importer takes it.
    pub fn opt_name(&self, name: &str) -> Result<Option<&'a str>, ErrorData> {
        let value = self.opt_str(name, NAME_MAX)?;
        match value.and_then(crate::core::budget::name_problem) {
            Some(problem) => Err(self.error(name, problem)),
            None => Ok(value),
        }
    }

    /// An optional model id, under the one rule every front end applies
    /// ([`model_id_problem`](crate::core::budget::model_id_problem)).
    pub fn opt_model(&self, name: &str) -> Result<Option<&'a str>, ErrorData> {
        let id = self.opt_str(name, NAME_MAX)?;
        match id.and_then(crate::core::budget::model_id_problem) {
            Some(problem) => Err(self.error(name, problem)),
            None => Ok(id),
        }
    }

    /// An optional name under the one name rule (the plan an execution links to): a name
    /// the store would refuse is a bad argument, named as one.
    pub fn opt_ruled_name(&self, name: &str) -> Result<Option<&'a str>, ErrorData> {
        let s = self.opt_str(name, NAME_MAX)?;
        match s.and_then(crate::core::budget::name_problem) {
            Some(problem) => Err(self.error(name, problem)),
            None => Ok(s),
        }
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ErrorData> {
        self.get(name)
            .map(|v| {
                v.as_bool().ok_or_else(|| {
                    self.error(name, format!("must be true or false, not {}", type_name(v)))
                })
            })
            .transpose()
    }

    pub fn bool(&self, name: &str) -> Result<bool, ErrorData> {
        self.opt_bool(name)?
            .ok_or_else(|| self.error(name, "is required (true or false)"))
    }

    /// An optional time: RFC 3339 (or Unix seconds, as `import executions` reads), within
    /// the years the history keeps; said back as given when it is not.
    pub fn opt_time(&self, name: &str) -> Result<Option<i64>, ErrorData> {
        let Some(text) = self.opt_str(name, NAME_MAX)? else {
            return Ok(None);
        };
        let secs = parse_timestamp(text)
            .map_err(|e| self.error(name, format!("is not an RFC 3339 time: {e}")))?;
        match crate::core::time::timestamp_out_of_range(text, secs) {
            None => Ok(Some(secs)),
            Some(problem) => Err(self.error(name, problem)),
        }
    }

    /// An optional whole number in `min..=max`.
    pub fn opt_u64(&self, name: &str, min: u64, max: u64) -> Result<Option<u64>, ErrorData> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        match whole_number(v) {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => {
                // A number is shown (cut as any quote is), anything else named by its kind:
                // a value is never echoed whole (tester 50 F9).
                let found = if v.is_number() {
                    crate::core::terminal_text::quoted_value(v)
                } else {
                    type_name(v).to_string()
                };
                Err(self.error(
                    name,
                    format!("must be a whole number from {min} to {max}, not {found}"),
                ))
            }
        }
    }

    /// `[{"name": …, "text": …}, …]`: at most [`ATTACHMENTS_MAX`], each text within
    /// [`TEXT_MAX`].
    pub fn attachments(&self, name: &str) -> Result<Vec<Attachment>, ErrorData> {
        let Some(v) = self.get(name) else {
            return Ok(Vec::new());
        };
        let Some(items) = v.as_array() else {
            return Err(self.error(
                name,
                format!(
                    "must be an array of {{\"name\", \"text\"}} objects, not {}",
                    type_name(v)
                ),
            ));
        };
        if items.len() > ATTACHMENTS_MAX {
            return Err(self.error(
                name,
                format!("has {} items; the limit is {ATTACHMENTS_MAX}", items.len()),
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = |field: &str| format!("{name}[{i}].{field}");
                let Some(obj) = item.as_object() else {
                    return Err(bad(
                        self.tool,
                        &format!("{name}[{i}]"),
                        format!(
                            "must be an object with name and text, not {}",
                            type_name(item)
                        ),
                    ));
                };
                if let Some(k) = obj.keys().find(|k| *k != "name" && *k != "text") {
                    return Err(bad(
                        self.tool,
                        &at(k),
                        "is not a field of an attachment (name, text)",
                    ));
                }
                let field = |f: &str, max: usize| -> Result<String, ErrorData> {
                    let v = obj
                        .get(f)
                        .filter(|v| !v.is_null())
                        .ok_or_else(|| bad(self.tool, &at(f), "is required"))?;
                    Ok(string_within(self.tool, &at(f), v, max)?.to_string())
                };
                let file_name = field("name", NAME_MAX)?;
                // A name the model reads in the part's header: empty or padded, it reads as
                // no name or another one (tester 12 T12-15). Line breaks are shown escaped.
                if file_name.trim().is_empty() {
                    return Err(bad(self.tool, &at("name"), "is empty"));
                }
                if file_name.trim() != file_name {
                    return Err(bad(self.tool, &at("name"), "has spaces around it"));
                }
                Ok(Attachment::new(file_name, field("text", TEXT_MAX)?))
            })
            .collect()
    }
}

/// An attachment as the request takes it.
pub use crate::core::request::Attachment;

/// A tool's input schema as advertised. An optional argument given as `null` is taken as
/// absent ([`Params`]), so every optional property says `null` too — its type, and its
/// `enum` when it has one (tester 20 F11: the schema said plain `string`, and a client
/// validating against it refused what the server takes). The one place every tool's
/// schema passes.
pub fn schema(mut value: Value) -> Arc<JsonObject> {
    let required: Vec<String> = value
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(properties) = value.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, property) in properties.iter_mut() {
            if required.contains(name) {
                continue;
            }
            if let Some(Value::String(kind)) = property.get("type").cloned() {
                property["type"] = json!([kind, "null"]);
            }
            if let Some(Value::Array(values)) = property.get_mut("enum") {
                values.push(Value::Null);
            }
        }
    }
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// The `maxLength` that holds for an argument the server bounds at `bytes` of UTF-8:
/// JSON Schema counts characters, and one takes at most 4 bytes (tester 20 F1: 200 CJK
/// characters passed the advertised 512 and were refused as 600 bytes).
pub fn max_chars(bytes: usize) -> usize {
    bytes / 4
}

/// A JSON number with no fraction, as JSON Schema's `integer` reads one: `3` and `3.0` (as
/// Python's `json.dumps(3.0)` writes it; tester 50 F14: refused), not `3.5` or `3e0`.
fn whole_number(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let text = v.as_number()?.to_string();
    let (whole, fraction) = text.split_once('.')?;
    (fraction.bytes().all(|b| b == b'0') && whole.bytes().all(|b| b.is_ascii_digit()))
        .then(|| whole.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap()
    }

    /// Tester 10 T10-23: an attachment's leading byte-order mark was kept by MCP `preview`
    /// and dropped by the CLI and the console: not text, here either.
    #[test]
    fn an_attachments_byte_order_mark_is_not_text() {
        let m = map(json!({"attachments": [{"name": "crlf.txt", "text": "\u{feff}line one\r\n"}]}));
        let p = Params::new("preview", &m, &["attachments"]).unwrap();
        let a = p.attachments("attachments").unwrap();
        assert_eq!(a[0].text, "line one\r\n");
    }

    /// Tester 50 F14: `3.0` is a JSON Schema `integer`; F9: a value of another kind is named
    /// by its kind, never echoed whole.
    #[test]
    fn a_whole_number_may_be_written_with_a_zero_fraction_and_a_wrong_one_is_not_echoed() {
        let wire: Value =
            serde_json::from_str(r#"{"a": 3.0, "b": 3.5, "c": 3e0, "d": [1, 2, 3], "e": 7}"#)
                .unwrap();
        let m = map(wire);
        let p = Params::new("t", &m, &["a", "b", "c", "d", "e"]).unwrap();
        assert_eq!(p.opt_u64("a", 1, 100).unwrap(), Some(3));
        assert_eq!(p.opt_u64("e", 1, 100).unwrap(), Some(7));
        for (name, says) in [("b", "not 3.5"), ("c", "not 3e+0"), ("d", "not an array")] {
            let e = p.opt_u64(name, 1, 100).unwrap_err();
            assert!(e.message.ends_with(says), "{name}: {}", e.message);
        }
    }

    #[test]
    fn each_problem_names_its_argument() {
        let m = map(json!({"query": 3, "k": 0, "ok": "yes"}));
        let p = Params::new("t", &m, &["query", "k", "ok", "model"]).unwrap();
        let e = p.str("query", 10).unwrap_err();
        assert!(
            e.message.contains("`query` must be a string, not a number"),
            "{}",
            e.message
        );
        let e = p.opt_u64("k", 1, 100).unwrap_err();
        assert!(
            e.message
                .contains("`k` must be a whole number from 1 to 100"),
            "{}",
            e.message
        );
        let e = p.bool("ok").unwrap_err();
        assert!(
            e.message.contains("`ok` must be true or false"),
            "{}",
            e.message
        );
        let e = p.str("model", 10).unwrap_err();
        assert!(e.message.contains("`model` is required"), "{}", e.message);
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        let e = Params::new("t", &m, &["query"]).err().unwrap();
        assert!(
            e.message.contains("`k` is not an argument of t"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_model_id_follows_the_one_rule_of_every_front_end() {
        for (id, problem) in [
            (" local/x", "has spaces around it"),
            ("", "is empty"),
            ("a\u{1b}b", "holds a control, bidi or invisible character"),
        ] {
            let m = map(json!({ "model": id }));
            let p = Params::new("t", &m, &["model"]).unwrap();
            let e = p.opt_model("model").unwrap_err();
            assert!(e.message.contains(problem), "{id:?}: {}", e.message);
        }
        let m = map(json!({"model": "local/x"}));
        let p = Params::new("t", &m, &["model"]).unwrap();
        assert_eq!(p.opt_model("model").unwrap(), Some("local/x"));
    }

    #[test]
    fn sizes_are_bounded_and_attachments_checked() {
        let m = map(json!({"s": "x".repeat(11), "a": [{"name": "n", "text": 5}]}));
        let p = Params::new("t", &m, &["s", "a"]).unwrap();
        let e = p.str("s", 10).unwrap_err();
        assert!(
            e.message.contains("is 11 bytes; the limit is 10 bytes"),
            "{}",
            e.message
        );
        let e = p.attachments("a").unwrap_err();
        assert!(
            e.message.contains("`a[0].text` must be a string"),
            "{}",
            e.message
        );
        for (name, why) in [
            ("", "is empty"),
            ("  ", "is empty"),
            ("  spaced  ", "has spaces around it"),
        ] {
            let m = map(json!({"a": [{"name": name, "text": "x"}]}));
            let p = Params::new("t", &m, &["a"]).unwrap();
            let e = p.attachments("a").unwrap_err();
            assert!(
                e.message.contains(&format!("`a[0].name` {why}")),
                "{}",
                e.message
            );
        }
    }
}
