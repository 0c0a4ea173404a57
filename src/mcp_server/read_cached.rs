//! The `read_cached` tool: a briefed paste's text as the output cache keeps it, whole or by
//! lines — the call every briefing sent names ("To read a part: read_cached(REF, lines=A:B)").
//! The same read as `ctxconsole cache get REF --lines A:B`
//! ([`crate::store::cache::read_cached`]): the same text (configured keys taken out when it
//! was kept), the same errors naming the ref. It only reads, so a `--read-only` server
//! serves it too.

use rmcp::ErrorData;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;

use crate::core::gate::{READ_CACHED_TOOL, parse_line_range};
use crate::mcp_server::params::{NAME_MAX, Params, max_chars, size_label};
use crate::store::cache::read_cached;

/// The most text one `read_cached` answer carries: a part of a paste, not the paste (the
/// answer travels twice, and a model reads it as context). Past it the text is cut at a line
/// end (a first line longer than this, within it) and the answer's note says so and from
/// which line to ask again.
pub const READ_CACHED_MAX: usize = 1024 * 1024;

/// The most that text may take once escaped as an answer carries it
/// ([`crate::core::terminal_text::json_escaped_len`]): a megabyte of controls or DEL is six
/// escaped, over the 6 MiB one answer may take (the handler's `RESULT_MAX`),
/// and is cut sooner instead of refused (tester 42 F1).
pub const READ_CACHED_ESCAPED_MAX: usize = 4 * 1024 * 1024;

/// The tool as `tools/list` shows it.
pub fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "ref": {"type": "string", "maxLength": max_chars(NAME_MAX), "description": "The reference a briefing names (16 hex digits), as in \"The full content is cached as REF\"."},
            "lines": {"type": "string", "maxLength": max_chars(NAME_MAX), "pattern": "^\\s*[0-9]+\\s*:\\s*[0-9]+\\s*$", "description": "1-based inclusive line range `A:B`, e.g. `2:42` (default: the whole text). Lines past the end are simply absent; a range starting after the last line is refused, naming how many there are."}
        },
        "required": ["ref"],
        "additionalProperties": false
    });
    Tool::new(
        READ_CACHED_TOOL,
        format!(
            "A briefed paste's full text from the output cache, whole or by lines, byte for byte as it was kept (configured provider keys show as [REDACTED]); at most {} a call, cut at a line end (within a first line longer than that) with a note saying where to go on. The same text as `ctxconsole cache get REF --lines A:B`.",
            size_label(READ_CACHED_MAX)
        ),
        // Through the one place every tool's schema passes (`null` for what is optional).
        super::params::schema(schema),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

#[derive(Serialize)]
struct Answer<'a> {
    #[serde(rename = "ref")]
    cache_ref: &'a str,
    /// The first line given (1-based).
    first_line: usize,
    /// Lines given.
    lines: usize,
    /// Bytes of `text`.
    bytes: usize,
    /// Cut at [`READ_CACHED_MAX`], or at its escaped bound: what was asked goes on after
    /// `text`.
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    text: &'a str,
}

/// The text under `ref` in the workspace `dir`'s output cache, by `lines` when given.
pub fn call(dir: &Path, args: &JsonObject) -> Result<Value, ErrorData> {
    let p = Params::new(READ_CACHED_TOOL, args, &["ref", "lines"])?;
    let cache_ref = p.non_empty("ref", NAME_MAX)?;
    let lines = p
        .opt_str("lines", NAME_MAX)?
        .map(|s| parse_line_range(s).map_err(|e| p.error("lines", format!("is not a range: {e}"))))
        .transpose()?;
    let text = match read_cached(dir, cache_ref, lines)
        .map_err(|e| ErrorData::internal_error(crate::exit::said(&e), None))?
    {
        Ok(text) => text,
        Err(not) => {
            let (argument, why) = match not {
                crate::store::cache::NotRead::PastEnd { .. } => ("lines", "is past the end"),
                _ => ("ref", "names nothing kept"),
            };
            return Err(p.error(
                argument,
                format!("{why}: {}", not.for_client(cache_ref, lines, "lines")),
            ));
        }
    };
    let first_line = lines.map_or(1, |(a, _)| a);
    let (given, cut) = within(&text, READ_CACHED_MAX, READ_CACHED_ESCAPED_MAX);
    let truncated = cut.is_some();
    let count = given.split_inclusive('\n').count();
    let note = cut.map(|cut| {
        let cut_at = match cut {
            Cut::Bytes => size_label(READ_CACHED_MAX),
            Cut::Escaped => format!(
                "{} escaped (its control characters take six bytes each as JSON)",
                size_label(READ_CACHED_ESCAPED_MAX)
            ),
        };
        let next = first_line + count;
        let asked_end = lines.map_or_else(|| "the end".to_string(), |(_, b)| b.to_string());
        let thousands = crate::format::thousands;
        // Whole lines, or else the first line asked, longer than an answer holds (`within`
        // cuts at a line end whenever one fits): lines cannot ask for the rest of it.
        let whole_lines = given.ends_with('\n');
        let first_line_len = text.find('\n').unwrap_or(text.len());
        let given_lines = if whole_lines {
            format!("lines {first_line}:{} are given", next - 1)
        } else {
            format!(
                "line {first_line} is given in part (its first {} of {} bytes; `ctxconsole cache get {cache_ref} --lines {first_line}:{first_line}` prints it whole)",
                thousands(given.len()),
                thousands(first_line_len),
            )
        };
        // Lines follow unless the one given in part was the last asked for.
        let rest = if whole_lines || first_line_len + 1 < text.len() {
            format!("ask for lines=\"{next}:{asked_end}\" for the rest")
        } else {
            "no line after it was asked for".to_string()
        };
        format!(
            "cut at {} ({} of {} bytes asked for): {given_lines}; {rest}",
            cut_at,
            thousands(given.len()),
            thousands(text.len()),
        )
    });
    serde_json::to_value(Answer {
        cache_ref,
        first_line,
        lines: count,
        bytes: given.len(),
        truncated,
        note,
        text: given,
    })
    .map_err(|e| ErrorData::internal_error(format!("{e:#}"), None))
}

/// Which bound cut a text.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Cut {
    /// Its bytes.
    Bytes,
    /// Its size escaped as an answer carries it.
    Escaped,
}

/// At most `max` bytes of `text`, and at most `max_escaped` once escaped as an answer
/// carries it, ending at a line end when one is within them (a single line longer is cut at
/// a character boundary), and the bound that cut it, if one did.
fn within(text: &str, max: usize, max_escaped: usize) -> (&str, Option<Cut>) {
    let mut escaped = 0;
    for (at, c) in text.char_indices() {
        escaped += crate::core::terminal_text::json_escaped_len(c);
        let cut = if at + c.len_utf8() > max {
            Cut::Bytes
        } else if escaped > max_escaped {
            Cut::Escaped
        } else {
            continue;
        };
        let head = &text[..at];
        let given = head.rfind('\n').map_or(head, |i| &text[..=i]);
        return (given, Some(cut));
    }
    (text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_line_end_and_a_long_line_at_a_character() {
        assert_eq!(within("ab\ncd\n", 10, 100), ("ab\ncd\n", None));
        assert_eq!(within("ab\ncd\n", 4, 100), ("ab\n", Some(Cut::Bytes)));
        assert_eq!(within("ééé", 3, 100), ("é", Some(Cut::Bytes)));
        // Escaped, a DEL is six bytes: the escaped bound cuts first.
        assert_eq!(
            within("\u{7f}\u{7f}\n\u{7f}\u{7f}\n", 100, 15),
            ("\u{7f}\u{7f}\n", Some(Cut::Escaped))
        );
        assert_eq!(
            within("\u{7f}\u{7f}\u{7f}", 100, 12),
            ("\u{7f}\u{7f}", Some(Cut::Escaped))
        );
    }
}
