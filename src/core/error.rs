//! Errors of the pure core. Each names what was being read and where.

use thiserror::Error;

use crate::core::terminal_text::{quoted, quoted_with};

#[derive(Debug, Error, PartialEq)]
pub enum CoreError {
    #[error("unknown tier '{0}': expected A, B or C")]
    UnknownTier(String),
    #[error("{origin}: line {line}, column {column}: {message}")]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{origin}: field '{field}' {problem}")]
    Field {
        origin: String,
        field: String,
        problem: String,
    },
    #[error("{origin}: {message}")]
    Content { origin: String, message: String },
}

impl CoreError {
    pub fn toml(origin: &str, text: &str, err: &toml::de::Error) -> CoreError {
        let (line, column) = err
            .span()
            .map(|s| line_col(text, s.start))
            .unwrap_or((1, 1));
        let message = quote_outside_text(err.message().trim());
        let message = message.as_str();
        let key = err.span().and_then(|s| key_before(text, s.start));
        // The toml crate's own words for a field with a fixed set of names given a number,
        // a boolean, an array…
        if message == "wanted string or table" {
            let found = err
                .span()
                .and_then(|s| text.get(s))
                .map(value_in_words)
                .unwrap_or_else(|| "not a string".to_string());
            let message = match key {
                Some(key) => format!("field '{key}' is {found}; expected {ENUM_EXPECTED}"),
                None => format!("found {found}; expected {ENUM_EXPECTED}"),
            };
            return CoreError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                message,
            };
        }
        // The value as the file writes it, for a reader that could not see it (a number past
        // what TOML holds never reaches it): `TOML_AS_WRITTEN` in its message.
        let written = err
            .span()
            .and_then(|s| text.get(s))
            .map(as_written)
            .unwrap_or_else(|| "a number TOML cannot hold".to_string());
        if message.contains(TOML_AS_WRITTEN) {
            return CoreError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                message: message.replace(TOML_AS_WRITTEN, &written),
            };
        }
        // An integer past i64: the toml crate reads it as i128 and says "integer `N` as
        // i128", and what it expected is whatever the reader asked for; the value is no TOML
        // integer at all, so that is what is said. Its own words for one from 2^63 to
        // 2^64−1 read into a TOML value, and for a float past f64, name no value at all:
        // the value is given as written.
        let beyond = integer_beyond_toml(message)
            .map(|found| (found.to_string(), BEYOND_TOML_INTEGERS))
            .or_else(|| number_past_toml(message).map(|bound| (written.clone(), bound)));
        if let Some((found, bound)) = beyond {
            let message = match key {
                Some(key) => format!("field '{key}' is {found}, {bound}"),
                None => format!("found {found}, {bound}"),
            };
            return CoreError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                message,
            };
        }
        let message = match (wrong_value(message, "a table"), key) {
            (Some((found, expected)), Some(key)) => {
                format!("field '{key}' is {found}; expected {expected}")
            }
            (Some((found, expected)), None) => format!("found {found}; expected {expected}"),
            (None, _) => message.to_string(),
        };
        CoreError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message,
        }
    }

    /// A serde_json error in `text` (what was parsed: the file, or the one line of a JSON
    /// Lines file), in a reader's words: the one mapping every JSON importer uses.
    pub fn json(origin: &str, text: &str, err: &serde_json::Error) -> CoreError {
        let escape = lone_surrogate(text, err.line(), err.column());
        Self::json_with(origin, escape, err)
    }

    /// As [`CoreError::json`] for a stream too large to keep: `recent` is the text the parser
    /// read last, up to where it stopped.
    pub fn json_streamed(origin: &str, recent: &str, err: &serde_json::Error) -> CoreError {
        let last = recent.rsplit('\n').next().unwrap_or("");
        Self::json_with(origin, lone_surrogate(last, 1, last.len()), err)
    }

    /// `escape`: the lone surrogate escape the parser stopped at, when there is one.
    fn json_with(origin: &str, escape: Option<&str>, err: &serde_json::Error) -> CoreError {
        let message = err.to_string();
        // serde_json appends " at line L column C"; the position is reported separately.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        // A lone surrogate is reported as a broken escape ("unexpected end of hex escape"),
        // which sends the reader looking for a cut-off `\u12`.
        let message = match escape.filter(|_| SURROGATE_MESSAGES.contains(&message.as_str())) {
            Some(escape) => format!("a lone UTF-16 surrogate ({escape}) is not a character"),
            None => message,
        };
        // serde_json's words for a byte that is not UTF-8 in a string it read from bytes
        // (a streamed file): said as the line readers say it.
        let message = if message == "invalid unicode code point" {
            "invalid UTF-8 (a byte inside a string is not UTF-8)".to_string()
        } else if is_too_deep(err) {
            too_deep().to_string()
        } else {
            message
        };
        let message = quote_outside_text(&message);
        // A reader that names the field (`field 'steps[].order' invalid type: …`) is said
        // as a TOML field is: `field 'steps[].order' is an array; expected …`.
        let named = message
            .strip_prefix("field '")
            .and_then(|rest| rest.split_once("' "))
            .and_then(|(field, rest)| Some((field, wrong_value(rest, "an object")?)));
        let message = match (named, wrong_value(&message, "an object")) {
            (Some((field, (found, expected))), _) => {
                format!("field '{field}' is {found}; expected {expected}")
            }
            (None, Some((found, expected))) => format!("found {found}; expected {expected}"),
            (None, None) => message,
        };
        CoreError::Syntax {
            origin: origin.to_string(),
            line: err.line().max(1),
            column: err.column().max(1),
            message,
        }
    }

    /// An error in one line of a JSON Lines file: the line is the file's (1-based), the
    /// column the parser's within that line (`text`).
    pub fn json_line(origin: &str, line: usize, text: &str, err: &serde_json::Error) -> CoreError {
        match CoreError::json(origin, text, err) {
            CoreError::Syntax {
                origin,
                column,
                message,
                ..
            } => CoreError::Syntax {
                origin,
                line,
                column,
                message,
            },
            other => other,
        }
    }

    /// A serde_json error in JSON text held inside a value (a spend log column, a span
    /// attribute written as a string): `what` names the value (`field 'messages'`), `origin`
    /// where it is (`FILE: line 2`); the line and column are within the value's text, and
    /// the message is [`CoreError::json`]'s (a lone surrogate named as one).
    pub fn json_within(origin: &str, what: &str, text: &str, err: &serde_json::Error) -> CoreError {
        // JSON that parses but does not read (a key given twice, a value of another type)
        // is not "not JSON" (tester 33 F6).
        let is_json = err.classify() == serde_json::error::Category::Data;
        match CoreError::json(origin, text, err) {
            CoreError::Syntax {
                origin,
                line,
                column,
                message,
            } => CoreError::Content {
                origin,
                message: if is_json {
                    format!(
                        "{what} holds JSON that does not read: {message} (line {line}, column \
                         {column} of its text)"
                    )
                } else {
                    format!(
                        "{what} is not JSON (line {line}, column {column} of its text: {message})"
                    )
                },
            },
            other => other,
        }
    }

    /// Invalid UTF-8: the position of the first bad byte.
    pub fn utf8(origin: &str, bytes: &[u8], err: &std::str::Utf8Error) -> CoreError {
        let good = &bytes[..err.valid_up_to()];
        // The valid prefix is UTF-8 by definition.
        let text = std::str::from_utf8(good).unwrap_or_default();
        let (line, column) = line_col(text, text.len());
        CoreError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message: format!("invalid UTF-8 (byte offset {})", err.valid_up_to()),
        }
    }
}

/// The deepest nesting of arrays and objects the JSON reader takes (serde_json's limit):
/// one level more is refused, at once and without recursing further.
pub const JSON_DEPTH_MAX: usize = 127;

/// How every reader says a JSON text is nested deeper than [`JSON_DEPTH_MAX`] (a catalog
/// file, an MCP server's answer): serde_json's own words are "recursion limit exceeded".
pub fn too_deep() -> &'static str {
    "nested deeper than 127 levels, the JSON reader's limit"
}

/// Whether serde_json stopped because the text is nested deeper than [`JSON_DEPTH_MAX`].
pub fn is_too_deep(err: &serde_json::Error) -> bool {
    // Read through a visitor of ours (an imported plan's steps) the category may be `Data`.
    err.to_string().starts_with("recursion limit exceeded")
}

/// What serde_json says when a `\uXXXX` escape is a surrogate with no partner.
const SURROGATE_MESSAGES: [&str; 2] = [
    "unexpected end of hex escape",
    "lone leading surrogate in hex escape",
];

/// The lone surrogate escape (`\ud800`) serde_json stopped at, as written: the last `\uXXXX`
/// before (1-based) `line`, `column` of `text` when it is a surrogate without its partner, or a
/// high surrogate followed by an escape that is not a low one. `None` when there is none.
fn lone_surrogate(text: &str, line: usize, column: usize) -> Option<&str> {
    let row = text.split('\n').nth(line.checked_sub(1)?)?;
    let mut end = column.min(row.len());
    while !row.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = &row[..end];
    let bytes = prefix.as_bytes();
    // Every `\uXXXX` in the prefix: (start, value, as written). Scanning forward keeps `\\u`
    // (an escaped backslash, then `u`) from counting.
    let mut escapes: Vec<(usize, u32, &str)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let hex = prefix
            .get(i + 2..i + 6)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        match hex.map(|h| u32::from_str_radix(h, 16)) {
            Some(Ok(value)) if bytes.get(i + 1) == Some(&b'u') => {
                escapes.push((i, value, &prefix[i..i + 6]));
                i += 6;
            }
            _ => i += 2,
        }
    }
    let high = |v: u32| (0xD800..=0xDBFF).contains(&v);
    let low = |v: u32| (0xDC00..=0xDFFF).contains(&v);
    let (&(start, value, written), before) = escapes.split_last()?;
    let partner = before.last().filter(|(s, _, _)| s + 6 == start);
    match partner {
        Some(&(_, p, p_written)) if high(p) && !low(value) => Some(p_written),
        Some(&(_, p, _)) if high(p) => None,
        _ if high(value) || low(value) => Some(written),
        _ => None,
    }
}

/// A parser's message with the file's own text in it (an unknown key or name, a string of the
/// wrong type) quoted through [`quoted`]: bounded, so a 100,000-character key is named by its
/// opening, not echoed. Names from the code (what was expected) are single-quoted likewise.
fn quote_outside_text(message: &str) -> String {
    for head in ["unknown field `", "unknown variant `"] {
        let Some(rest) = message.strip_prefix(head) else {
            continue;
        };
        // The file's text runs to the last "`, expected" (the text itself may hold one).
        let end = rest
            .rfind("`, expected ")
            .or_else(|| rest.rfind("`, there are no "));
        if let Some(end) = end {
            return format!(
                "{}{}{}",
                &head[..head.len() - 1],
                quoted(&rest[..end]),
                rest[end + 1..].replace('`', "'")
            );
        }
        return format!("{}{}", &head[..head.len() - 1], quoted(rest));
    }
    for kind in ["type", "value"] {
        if let Some((head, rest)) = message.split_once(&format!("invalid {kind}: string \""))
            && let Some((text, tail)) = rest.rsplit_once("\", expected ")
        {
            return format!(
                "{head}invalid {kind}: string {}, expected {tail}",
                quoted_with(text, '"')
            );
        }
    }
    message.to_string()
}

/// What was found and what was expected, in an operator's words, when serde says a value
/// has the wrong type or range ("invalid type: string \"4\", expected usize" → `string "4"`,
/// "a whole number of 0 or more"); `None` for any other message. `map` is what the format
/// calls a map.
fn wrong_value(message: &str, map: &str) -> Option<(String, String)> {
    // serde reads a struct from an array too, and then says "invalid length 0, expected
    // struct Prices with 1 element": a table was wanted.
    if let Some((_, expected)) = message
        .strip_prefix("invalid length ")
        .and_then(|rest| rest.split_once(", expected "))
        && expected.starts_with("struct ")
    {
        return Some(("an array".to_string(), map.to_string()));
    }
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let (found, expected) = rest.rsplit_once(", expected ")?;
    let quoted = |prefix: &str| {
        found
            .strip_prefix(prefix)
            .map(|v| v.trim_matches('`').to_string())
    };
    let found = quoted("integer ")
        .or_else(|| quoted("floating point "))
        .or_else(|| quoted("boolean "))
        .unwrap_or_else(|| match found {
            "sequence" => "an array".to_string(),
            "map" => map.to_string(),
            other => other.to_string(),
        });
    Some((found, expected_in_words(expected, map)))
}

/// What serde says a value should be, in a user's words: never the name of an internal type
/// (`struct RoleSpec`, `enum Tier`), and the format's words for a map and a sequence.
fn expected_in_words(expected: &str, map: &str) -> String {
    if expected.starts_with("struct ") {
        return map.to_string();
    }
    if expected.starts_with("enum ") {
        return ENUM_EXPECTED.to_string();
    }
    match expected {
        "usize" | "u8" | "u16" | "u32" | "u64" | "u128" => "a whole number of 0 or more",
        "isize" | "i8" | "i16" | "i32" | "i64" | "i128" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a map" => map,
        "a sequence" => "an array",
        other => other,
    }
    .to_string()
}

/// What kind of TOML value `value` (its text as written) is, in words: the value itself is
/// not echoed (it may be any length).
fn value_in_words(value: &str) -> String {
    match value.trim_start().chars().next() {
        Some('[') => "an array",
        Some('{') => "a table",
        Some('t' | 'f') => "true or false",
        Some(c) if c.is_ascii_digit() || matches!(c, '+' | '-' | 'i' | 'n') => "a number",
        _ => "not a string",
    }
    .to_string()
}

/// What is said of an integer past TOML's 64 bits.
const BEYOND_TOML_INTEGERS: &str =
    "beyond the whole numbers TOML holds (-9223372036854775808 to 9223372036854775807)";

/// What is said of a float past f64 (TOML's floats are IEEE 754 binary64).
const BEYOND_TOML_FLOATS: &str =
    "beyond the numbers TOML holds (-1.7976931348623157e308 to 1.7976931348623157e308)";

/// Stands, in a field reader's message, for the value as the file writes it: a number past
/// what TOML holds fails in the parser before any reader sees it, and only the parser's
/// span has its text. [`CoreError::toml`] puts the text in (a table or an array in words).
pub const TOML_AS_WRITTEN: &str = "\u{2039}the value as written\u{203a}";

/// The toml crate's words for a number it read but a TOML value cannot hold (2^63 to
/// 2^64−1 read into a TOML value; an integer past 128 bits; a float past f64), with the
/// bound that is said instead, or `None`.
fn number_past_toml(message: &str) -> Option<&'static str> {
    match message {
        "u64 value was too large" | "integer number overflowed" => Some(BEYOND_TOML_INTEGERS),
        "floating-point number overflowed" => Some(BEYOND_TOML_FLOATS),
        _ => None,
    }
}

/// A TOML value's text as an error gives it: a number as written (a 65-bit binary literal
/// too, tester 9 T9-12: it read "a number"), [`quoted`](crate::core::terminal_text::quoted)
/// and cut when longer than a quote holds; anything else in words ([`value_in_words`]),
/// never echoed.
fn as_written(value: &str) -> String {
    let value = value.trim();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.');
    if value.is_empty() || !value.chars().all(plain) {
        value_in_words(value)
    } else if value.len() <= crate::core::terminal_text::QUOTE_CHARS {
        value.to_string()
    } else {
        crate::core::terminal_text::quoted(value)
    }
}

/// The integer in the toml crate's words for one it read past i64 ("invalid type: integer
/// `99999999999999999999` as i128, expected …"), or `None`.
fn integer_beyond_toml(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("invalid type: integer `")
        .or_else(|| message.strip_prefix("invalid value: integer `"))?;
    let (number, tail) = rest.split_once('`')?;
    let wide = tail.starts_with(" as i128") || tail.starts_with(" as u128");
    let digits = number.strip_prefix('-').unwrap_or(number);
    (wide && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(number)
}

/// What a field with a fixed set of names takes, when the value is not even a string.
const ENUM_EXPECTED: &str = "one of its names, as a string";

/// The key a TOML value at byte `offset` is given to (`input_tokens = "32000"`, or `input`
/// in `prices = { input = "1.0" }`): the last bare or quoted key before an `=` on its line.
/// A key that opens its line under a `[table]` header is named with the table
/// (`llm.timeout`), as the range checks name it; under an `[[array]]` header, or inside an
/// inline table, the key alone.
fn key_before(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let (earlier, line) = match text[..offset].rsplit_once('\n') {
        Some((earlier, line)) => (earlier, line),
        None => ("", &text[..offset]),
    };
    let (before, _) = line.rsplit_once('=')?;
    let before = before.trim_end();
    let key = before
        .rsplit(|c: char| c == '{' || c == ',' || c.is_whitespace())
        .next()?
        .trim_matches(|c| c == '"' || c == '\'');
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if key.is_empty() || key.len() > 64 || !key.chars().all(bare) {
        return None;
    }
    let opens_line = !before.contains(['{', ',', '=']);
    let table = earlier
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .filter(|h| !h.starts_with("[[") && h.ends_with(']'))
        .map(|h| h[1..h.len() - 1].trim())
        .filter(|t| !t.is_empty() && t.len() <= 64 && t.chars().all(bare));
    Some(match table {
        Some(table) if opens_line => format!("{table}.{key}"),
        _ => key.to_string(),
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut offset = offset;
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// Decode bytes as UTF-8 or say where they stop being UTF-8.
pub fn utf8_text<'a>(origin: &str, bytes: &'a [u8]) -> Result<&'a str, CoreError> {
    std::str::from_utf8(bytes).map_err(|e| CoreError::utf8(origin, bytes, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é\nx", 3), (2, 1));
    }

    /// A value of the wrong type or range is said in an operator's words, with its key.
    #[test]
    fn wrong_types_are_said_plainly_with_their_key() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Row {
            input_tokens: usize,
            #[serde(default)]
            prices: Option<Prices>,
            #[serde(default)]
            strict: Option<bool>,
            #[serde(default)]
            seed: Option<i64>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Prices {
            input: f64,
        }
        let said = |text: &str| {
            let err = toml::from_str::<Row>(text).unwrap_err();
            CoreError::toml("budgets.toml", text, &err).to_string()
        };
        assert_eq!(
            said("input_tokens = \"32000\""),
            "budgets.toml: line 1, column 16: field 'input_tokens' is string \"32000\"; expected a whole number of 0 or more"
        );
        assert_eq!(
            said("input_tokens = -5"),
            "budgets.toml: line 1, column 16: field 'input_tokens' is -5; expected a whole number of 0 or more"
        );
        assert_eq!(
            said("input_tokens = 2.5"),
            "budgets.toml: line 1, column 16: field 'input_tokens' is 2.5; expected a whole number of 0 or more"
        );
        assert_eq!(
            said("input_tokens = 1\nprices = { input = \"1.0\" }"),
            "budgets.toml: line 2, column 20: field 'input' is string \"1.0\"; expected a number"
        );
        assert_eq!(
            said("input_tokens = 1\nstrict = 1"),
            "budgets.toml: line 2, column 10: field 'strict' is 1; expected true or false"
        );
        assert_eq!(
            said("input_tokens = 1\nseed = [1]"),
            "budgets.toml: line 2, column 8: field 'seed' is an array; expected a whole number"
        );
        // Other messages pass as the parser says them.
        assert!(
            said("input_tokens = ").contains("line 1"),
            "{}",
            said("input_tokens = ")
        );
        let text = "{\"input_tokens\": true}";
        let err = serde_json::from_str::<Row>(text).unwrap_err();
        assert_eq!(
            CoreError::json("catalog.json", text, &err).to_string(),
            "catalog.json: line 1, column 21: found true; expected a whole number of 0 or more"
        );
        // Never serde's name for an internal type, nor its "map" and "sequence".
        let text = "{\"input_tokens\": 1, \"prices\": 5}";
        let err = serde_json::from_str::<Row>(text).unwrap_err();
        assert_eq!(
            CoreError::json("catalog.json", text, &err).to_string(),
            "catalog.json: line 1, column 31: found 5; expected an object"
        );
        assert_eq!(
            said("input_tokens = 1\nprices = []"),
            "budgets.toml: line 2, column 10: field 'prices' is an array; expected a table"
        );
        // An integer beyond TOML's 64 bits: said as such, never with serde's `as i128`
        // (tester 6 F6: "is 99999999999999999999` as i128; expected any valid TOML value").
        assert_eq!(
            said("input_tokens = 99999999999999999999"),
            "budgets.toml: line 1, column 16: field 'input_tokens' is 99999999999999999999, \
             beyond the whole numbers TOML holds (-9223372036854775808 to 9223372036854775807)"
        );
        assert_eq!(
            said("input_tokens = -99999999999999999999"),
            "budgets.toml: line 1, column 16: field 'input_tokens' is -99999999999999999999, \
             beyond the whole numbers TOML holds (-9223372036854775808 to 9223372036854775807)"
        );
        // Read through a TOML value first (as config.toml is), the parser's own words differ.
        let text = "[llm]\nretries = 99999999999999999999\n";
        let err = toml::from_str::<toml::Table>(text).unwrap_err();
        assert_eq!(
            CoreError::toml("config.toml", text, &err).to_string(),
            "config.toml: line 2, column 11: field 'llm.retries' is 99999999999999999999, \
             beyond the whole numbers TOML holds (-9223372036854775808 to 9223372036854775807)"
        );
        // A key on its own line under a table header is named with its table, as range
        // errors name it.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Config {
            llm: Llm,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Llm {
            timeout: String,
        }
        let text = "# settings\n[llm]\ntimeout = 0\n";
        let err = toml::from_str::<Config>(text).unwrap_err();
        assert_eq!(
            CoreError::toml("config.toml", text, &err).to_string(),
            "config.toml: line 3, column 11: field 'llm.timeout' is 0; expected a string"
        );
    }

    #[test]
    fn a_lone_surrogate_is_found_where_the_parser_stopped() {
        let said = |text: &str| {
            let err = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            CoreError::json("f.json", text, &err).to_string()
        };
        assert!(
            said(r#"["\ud800"]"#).ends_with("a lone UTF-16 surrogate (\\ud800) is not a character")
        );
        assert!(said("[\n\"ok\",\n\"\\uDC00x\"]").contains("line 3, column "));
        // A surrogate pair is a character; an escaped backslash before `u` is no escape.
        assert!(serde_json::from_str::<String>(r#""\ud83d\ude00""#).is_ok());
        assert!(!said(r#"["\\ud800", "\u12"]"#).contains("surrogate"));
    }

    #[test]
    fn json_inside_a_value_is_said_through_the_same_mapping() {
        let text = "[\"ok\",\n \"\\ud800\"]";
        let err = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        let said = CoreError::json_within("f.jsonl: line 4", "field 'messages'", text, &err);
        assert_eq!(
            said.to_string(),
            "f.jsonl: line 4: field 'messages' is not JSON (line 2, column 9 of its text: \
             a lone UTF-16 surrogate (\\ud800) is not a character)"
        );
    }

    /// Tester 6 F7: a catalog nested 200 deep said serde's "recursion limit exceeded".
    #[test]
    fn nesting_past_the_readers_limit_is_said_as_such() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let ok = nested(JSON_DEPTH_MAX);
        assert!(serde_json::from_str::<serde_json::Value>(&ok).is_ok());
        let deep = format!("{{\"tools\":\n {}}}", nested(200));
        let err = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(is_too_deep(&err));
        assert_eq!(
            CoreError::json("deep200.json", &deep, &err).to_string(),
            format!("deep200.json: line 2, column 128: {}", too_deep())
        );
        let err =
            serde_json::from_str::<serde_json::Value>(&nested(JSON_DEPTH_MAX + 1)).unwrap_err();
        assert!(is_too_deep(&err), "{err}");
        let other = serde_json::from_str::<serde_json::Value>("[1,").unwrap_err();
        assert!(!is_too_deep(&other));
    }

    #[test]
    fn invalid_utf8_names_line() {
        let bytes = b"{\n  \"a\": \"\xff\"\n}";
        let err = utf8_text("cat.json", bytes).unwrap_err().to_string();
        assert!(err.starts_with("cat.json: line 2, column 9"), "{err}");
    }
}
