//! The context gate (DESIGN §2.7, seed 002): budget accounting with an output reserve, the
//! raw / tight / briefing decision, and deterministic structural briefings — a map of what
//! is where, with line numbers to navigate by, never a lossy summary.

use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use std::sync::OnceLock;

/// Share of the window kept free for the model's reply.
pub const OUTPUT_RESERVE: f64 = 0.20;
/// Content that fits but leaves less than this share of the usable window free is `tight`.
pub const TIGHT_BELOW: f64 = 0.20;
/// Above this many bytes content is not tokenised exactly to decide: it is estimated.
pub const EXACT_COUNT_MAX_BYTES: usize = 2 * 1024 * 1024;

/// Pure token accounting for one context window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContextBudget {
    pub max_tokens: usize,
    pub used_tokens: usize,
    pub output_reserve: f64,
}

impl ContextBudget {
    pub fn new(max_tokens: usize, used_tokens: usize) -> ContextBudget {
        ContextBudget {
            max_tokens,
            used_tokens,
            output_reserve: OUTPUT_RESERVE,
        }
    }

    /// The window less the output reserve.
    pub fn ceiling(&self) -> usize {
        (self.max_tokens as f64 * (1.0 - self.output_reserve)) as usize
    }

    /// Tokens available for new content.
    pub fn available(&self) -> usize {
        self.ceiling().saturating_sub(self.used_tokens)
    }

    pub fn consume(&mut self, tokens: usize) {
        self.used_tokens += tokens;
    }

    pub fn reset(&mut self, used: usize) {
        self.used_tokens = used;
    }
}

/// How content enters the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// Fits with room to spare: passed as it is.
    Raw,
    /// Fits, but leaves under 20 % of the usable window free: passed, flagged.
    Tight,
    /// Does not fit: a structural briefing goes in, the full text to the output cache.
    Briefing,
    /// Does not fit, and its briefing would be no smaller (a short text in a tiny window):
    /// passed as it is, over the window, rather than made larger (tester 30 F1: a 13-token
    /// line became a 122-token map of itself).
    Over,
}

impl Admission {
    pub fn label(self) -> &'static str {
        match self {
            Admission::Raw => "raw",
            Admission::Tight => "tight",
            Admission::Briefing => "briefing",
            Admission::Over => "over",
        }
    }
}

/// The output cache's key for content: 16 hex digits of its SHA-256. Pure, so a request
/// names where a briefed part will be kept before anything is written.
pub fn content_ref(content: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(content);
    crate::core::text::hex(&digest[..8])
}

/// The gate's decision for content of `tokens` tokens.
pub fn admit(budget: &ContextBudget, tokens: usize) -> Admission {
    // A window already over before this part: any text is briefed, and nothing (an empty
    // instruction) does not "fit" either (tester 32 F7: `tight: 0 tokens against 0
    // available … fits`, with 119 used of a 100-token ceiling).
    if budget.used_tokens > budget.ceiling() {
        return if tokens == 0 {
            Admission::Over
        } else {
            Admission::Briefing
        };
    }
    let available = budget.available();
    if tokens > available {
        return Admission::Briefing;
    }
    let left = available - tokens;
    if (left as f64) < budget.ceiling() as f64 * TIGHT_BELOW {
        Admission::Tight
    } else {
        Admission::Raw
    }
}

/// What kind of text a briefing maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentKind {
    Rust,
    Python,
    JavaScript,
    Go,
    Markdown,
    Json,
    Text,
}

impl ContentKind {
    pub fn label(self) -> &'static str {
        match self {
            ContentKind::Rust => "Rust source",
            ContentKind::Python => "Python source",
            ContentKind::JavaScript => "TypeScript/JavaScript source",
            ContentKind::Go => "Go source",
            ContentKind::Markdown => "Markdown",
            ContentKind::Json => "JSON",
            ContentKind::Text => "text/log",
        }
    }
}

/// Guess the kind from a file name when there is one, else from the first lines.
pub fn detect_kind(name: Option<&str>, text: &str) -> ContentKind {
    if let Some(ext) = name.and_then(|n| n.rsplit_once('.')).map(|(_, e)| e) {
        match ext.to_ascii_lowercase().as_str() {
            "rs" => return ContentKind::Rust,
            "py" => return ContentKind::Python,
            "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" => return ContentKind::JavaScript,
            "go" => return ContentKind::Go,
            "md" | "markdown" => return ContentKind::Markdown,
            "json" => return ContentKind::Json,
            _ => {}
        }
    }
    let head: String = text.lines().take(200).collect::<Vec<_>>().join("\n");
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && text.len() <= EXACT_COUNT_MAX_BYTES * 8
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    {
        return ContentKind::Json;
    }
    let score = |pats: &[&str]| {
        head.lines()
            .filter(|l| pats.iter().any(|p| l.trim_start().starts_with(p)))
            .count()
    };
    let candidates = [
        (
            ContentKind::Rust,
            score(&[
                "fn ",
                "pub fn ",
                "impl ",
                "use ",
                "pub struct ",
                "struct ",
                "mod ",
                "#[",
                "pub enum ",
            ]),
        ),
        (
            ContentKind::Python,
            score(&["def ", "class ", "import ", "from ", "async def ", "@"]),
        ),
        (
            ContentKind::JavaScript,
            score(&[
                "function ",
                "export ",
                "const ",
                "import ",
                "interface ",
                "let ",
                "async function ",
            ]),
        ),
        (
            ContentKind::Go,
            score(&["package ", "func ", "type ", "import ("]),
        ),
        (
            ContentKind::Markdown,
            score(&["# ", "## ", "### ", "- ", "* "]),
        ),
    ];
    let (kind, best) = candidates
        .into_iter()
        .max_by_key(|(_, s)| *s)
        .unwrap_or((ContentKind::Text, 0));
    if best >= 2 { kind } else { ContentKind::Text }
}

/// One line of a briefing's map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapEntry {
    /// 1-based first line, and last line when it is a range.
    pub line: usize,
    pub end_line: Option<usize>,
    pub text: String,
}

/// A structural briefing of content too large for the context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Briefing {
    pub kind: ContentKind,
    pub bytes: usize,
    pub lines: usize,
    pub cache_ref: String,
    pub entries: Vec<MapEntry>,
    /// Entries left out to keep the briefing short.
    pub omitted: usize,
    /// How to read a part, e.g. `ctxconsole cache get 3f… --lines 46:200`, or
    /// [`NOT_KEPT_HINT`].
    pub hint: String,
    /// The briefing as it is sent.
    pub text: String,
}

/// A briefing's [`Briefing::hint`] when the full text is not kept.
pub const NOT_KEPT_HINT: &str = "not kept: only the map was sent";

/// Most map entries a briefing lists before it says how many more there are.
pub const MAX_ENTRIES: usize = 60;
/// Longest line a briefing quotes.
const QUOTE_CHARS: usize = 160;

fn quote(line: &str) -> String {
    let t = line.trim_end();
    if t.chars().count() > QUOTE_CHARS {
        let cut: String = t.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    } else {
        t.to_string()
    }
}

fn definition_pattern(kind: ContentKind) -> Option<&'static Regex> {
    static RUST: OnceLock<Option<Regex>> = OnceLock::new();
    static PY: OnceLock<Option<Regex>> = OnceLock::new();
    static JS: OnceLock<Option<Regex>> = OnceLock::new();
    static GO: OnceLock<Option<Regex>> = OnceLock::new();
    let (cell, pattern) = match kind {
        ContentKind::Rust => (
            &RUST,
            r"^\s*(pub(\([^)]*\))?\s+)?(async\s+)?(unsafe\s+)?(fn|struct|enum|trait|impl|mod|type|const|static|macro_rules!)\b",
        ),
        ContentKind::Python => (&PY, r"^\s*(async\s+def|def|class)\s+\w+"),
        ContentKind::JavaScript => (
            &JS,
            r"^\s*(export\s+)?(default\s+)?(async\s+)?(function\*?\s+\w+|class\s+\w+|interface\s+\w+|type\s+\w+\s*=|enum\s+\w+|(const|let)\s+\w+\s*=\s*(async\s*)?(\([^)]*\)|\w+)\s*=>)",
        ),
        ContentKind::Go => (&GO, r"^(func|type)\s+"),
        _ => return None,
    };
    // The patterns are constants, checked by the tests below.
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// The tool a briefing names for reading the rest of a kept paste: ctxconsole's MCP server
/// serves it, and the plan guard knows it as ctxconsole's own.
pub const READ_CACHED_TOOL: &str = "read_cached";

/// Build the briefing for `text`. `cache_ref` is the full text's reference; `kept` says
/// whether the output cache holds it: only then does the briefing name the ref and
/// [`READ_CACHED_TOOL`], otherwise it says the rest is not kept (tester 19 F14: with
/// `--no-cache` it claimed a cache there was not).
pub fn briefing(
    text: &str,
    kind: ContentKind,
    cache_ref: &str,
    kept: bool,
    name: Option<&str>,
) -> Briefing {
    let lines = text.lines().count();
    let mut entries = match kind {
        ContentKind::Markdown => markdown_map(text, lines),
        ContentKind::Json => json_map(text),
        ContentKind::Text => text_map(text, lines),
        code => code_map(text, code),
    };
    let omitted = entries.len().saturating_sub(MAX_ENTRIES);
    entries.truncate(MAX_ENTRIES);
    let (a, b) = entries
        .iter()
        .find(|e| e.end_line.is_some() || e.line > 1)
        .map(|e| (e.line, e.end_line.unwrap_or(e.line + 40).min(lines.max(1))))
        .unwrap_or((1, lines.clamp(1, 40)));
    let hint = if kept {
        format!("ctxconsole cache get {cache_ref} --lines {a}:{b}")
    } else {
        NOT_KEPT_HINT.to_string()
    };
    let title = name.unwrap_or("pasted content");
    let mut out = format!(
        "# {title} ({} lines, {} bytes, {})\n",
        lines,
        text.len(),
        kind.label()
    );
    out.push_str(match kind {
        ContentKind::Markdown => "## Headings\n",
        ContentKind::Json => "## Structure (key paths, types, array lengths)\n",
        ContentKind::Text => "## Map\n",
        _ => "## Definitions\n",
    });
    for e in &entries {
        match e.end_line {
            Some(end) => out.push_str(&format!("- lines {}-{}: {}\n", e.line, end, e.text)),
            None if e.line == 0 => out.push_str(&format!("- {}\n", e.text)),
            None => out.push_str(&format!("- line {}: {}\n", e.line, e.text)),
        }
    }
    if omitted > 0 {
        out.push_str(&format!("- … {omitted} more\n"));
    }
    if kept {
        out.push_str(&format!(
            "\nThe full content is cached as {cache_ref}. To read a part: {READ_CACHED_TOOL}(\"{cache_ref}\", lines=\"{a}:{b}\")\n"
        ));
    } else {
        out.push_str(
            "\nOnly this map was sent; the rest of the content is not kept and cannot be read.\n",
        );
    }
    Briefing {
        kind,
        bytes: text.len(),
        lines,
        cache_ref: cache_ref.to_string(),
        entries,
        omitted,
        hint,
        text: out,
    }
}

fn code_map(text: &str, kind: ContentKind) -> Vec<MapEntry> {
    let Some(re) = definition_pattern(kind) else {
        return Vec::new();
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, l)| MapEntry {
            line: i + 1,
            end_line: None,
            text: quote(l.trim().trim_end_matches('{').trim_end()),
        })
        .collect()
}

fn markdown_map(text: &str, total: usize) -> Vec<MapEntry> {
    let mut heads: Vec<(usize, usize, String)> = Vec::new();
    let mut fenced = false;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let level = l.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&level) && l[level..].starts_with(' ') {
            heads.push((i + 1, level, l[level..].trim().to_string()));
        }
    }
    (0..heads.len())
        .map(|k| {
            let (line, level, title) = &heads[k];
            // A section runs to the line before the next heading of the same or a higher level.
            let end = heads[k + 1..]
                .iter()
                .find(|(_, l, _)| l <= level)
                .map_or(total, |(n, _, _)| n - 1);
            MapEntry {
                line: *line,
                end_line: Some(end.max(*line)),
                text: format!("{} {}", "#".repeat(*level), quote(title)),
            }
        })
        .collect()
}

fn json_map(text: &str) -> Vec<MapEntry> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return vec![MapEntry {
            line: 0,
            end_line: None,
            text: "not valid JSON as a whole".into(),
        }];
    };
    let mut out = Vec::new();
    json_paths(&value, "$", 0, &mut out);
    out
}

fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(a) => format!("array[{}]", a.len()),
        Value::Object(o) => format!("object{{{}}}", o.len()),
    }
}

fn json_paths(v: &Value, path: &str, depth: usize, out: &mut Vec<MapEntry>) {
    if out.len() > MAX_ENTRIES * 4 {
        return;
    }
    out.push(MapEntry {
        line: 0,
        end_line: None,
        text: format!("{path}: {}", json_type(v)),
    });
    if depth >= 4 {
        return;
    }
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                json_paths(child, &format!("{path}.{k}"), depth + 1, out);
            }
        }
        // Arrays are described by their first element: items usually share a shape.
        Value::Array(a) => {
            if let Some(first) = a.first() {
                json_paths(first, &format!("{path}[0]"), depth + 1, out);
            }
        }
        _ => {}
    }
}

fn is_error_line(line: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\b(error|err|fatal|panic(ked)?|exception|traceback|failed|failure|critical)\b",
        )
        .ok()
    })
    .as_ref()
    .is_some_and(|re| re.is_match(line))
}

fn text_map(text: &str, total: usize) -> Vec<MapEntry> {
    const HEAD: usize = 5;
    const TAIL: usize = 5;
    const ERRORS: usize = 20;
    let mut out: Vec<MapEntry> = text
        .lines()
        .take(HEAD)
        .enumerate()
        .map(|(i, l)| MapEntry {
            line: i + 1,
            end_line: None,
            text: format!("head: {}", quote(l)),
        })
        .collect();
    let mut errors = 0;
    let mut error_total = 0;
    for (i, l) in text.lines().enumerate() {
        if is_error_line(l) {
            error_total += 1;
            if errors < ERRORS {
                errors += 1;
                out.push(MapEntry {
                    line: i + 1,
                    end_line: None,
                    text: format!("error: {}", quote(l)),
                });
            }
        }
    }
    if error_total > errors {
        out.push(MapEntry {
            line: 0,
            end_line: None,
            text: format!("{} more error lines", error_total - errors),
        });
    }
    if total > HEAD {
        let tail_start = total.saturating_sub(TAIL).max(HEAD);
        let tail: Vec<&str> = text.lines().skip(tail_start).collect();
        out.extend(tail.iter().enumerate().map(|(k, l)| MapEntry {
            line: tail_start + k + 1,
            end_line: None,
            text: format!("tail: {}", quote(l)),
        }));
    }
    out
}

/// Lines `a..=b` (1-based, inclusive) of `text`, byte for byte: each line keeps its own
/// ending (`\n`, `\r\n`, none on a last line without one), so the lines `1:N` of a text of
/// N lines are the text itself (tester 20 F16: a CRLF came back as LF). The part of the
/// range past the last line is simply absent, but a range starting after it is `Err` with
/// the number of lines the text has (nothing there to give).
pub fn line_range(text: &str, a: usize, b: usize) -> Result<String, usize> {
    let mut out = String::new();
    let mut taken = 0usize;
    for l in text
        .split_inclusive('\n')
        .skip(a.saturating_sub(1))
        .take(b.saturating_sub(a).saturating_add(1))
    {
        out.push_str(l);
        taken += 1;
    }
    if taken == 0 {
        return Err(text.lines().count());
    }
    Ok(out)
}

/// A line range as `cache get --lines` and MCP `read_cached` take it: `A:B`, 1-based and
/// inclusive, `1 ≤ A ≤ B`. The error says what is wrong with `s`.
pub fn parse_line_range(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}': expected A:B, like 46:200"))?;
    let bound = |text: &str, name: &str| {
        text.trim().parse::<usize>().map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow => {
                format!("'{s}': {name} is too large (at most {})", usize::MAX)
            }
            _ => format!("'{s}': {name} is not a number"),
        })
    };
    let (a, b) = (bound(a, "A")?, bound(b, "B")?);
    if a == 0 || b < a {
        return Err(format!("'{s}': expected 1 ≤ A ≤ B"));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_and_admission() {
        let b = ContextBudget::new(10_000, 1_000);
        assert_eq!(b.ceiling(), 8_000);
        assert_eq!(b.available(), 7_000);
        assert_eq!(admit(&b, 100), Admission::Raw);
        assert_eq!(admit(&b, 6_000), Admission::Tight);
        assert_eq!(admit(&b, 7_001), Admission::Briefing);
        let mut b = b;
        b.consume(7_000);
        assert_eq!(b.available(), 0);
        b.reset(0);
        assert_eq!(b.available(), 8_000);
    }

    /// Tester 32 F7: an empty instruction in a window already over (119 used of a
    /// 100-token ceiling) was `tight` — "fits" — for 0 tokens against 0 available.
    #[test]
    fn nothing_does_not_fit_a_window_already_over() {
        let over = ContextBudget::new(125, 119);
        assert_eq!(over.ceiling(), 100);
        assert_eq!(admit(&over, 0), Admission::Over);
        assert_eq!(admit(&over, 1), Admission::Briefing);
        // Full to the token is not over: an empty part still fits, with nothing free.
        let full = ContextBudget::new(125, 100);
        assert_eq!(admit(&full, 0), Admission::Tight);
        assert_eq!(admit(&full, 1), Admission::Briefing);
    }

    const RUST: &str = "use std::io;\n\npub struct Config {\n    a: u32,\n}\n\nimpl Config {\n    pub fn new() -> Self {\n        Config { a: 1 }\n    }\n}\n\nfn main() {}\n";

    #[test]
    fn code_briefings_list_definitions_with_lines() {
        assert_eq!(detect_kind(None, RUST), ContentKind::Rust);
        let b = briefing(RUST, ContentKind::Rust, "abc", true, Some("main.rs"));
        let lines: Vec<usize> = b.entries.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![3, 7, 8, 13]);
        assert!(b.text.contains("line 8: pub fn new() -> Self"));
        assert!(b.hint.starts_with("ctxconsole cache get abc --lines 3:"));
        let py =
            "import os\n\nclass A:\n    def f(self):\n        pass\n\nasync def g():\n    pass\n";
        assert_eq!(detect_kind(None, py), ContentKind::Python);
        let b = briefing(py, ContentKind::Python, "r", true, None);
        assert_eq!(
            b.entries.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![3, 4, 7]
        );
        let ts = "import x from 'y';\nexport function a() {}\nexport const b = (x) => x;\ninterface C {}\nclass D {}\n";
        assert_eq!(detect_kind(Some("a.ts"), ts), ContentKind::JavaScript);
        assert_eq!(
            briefing(ts, ContentKind::JavaScript, "r", true, None)
                .entries
                .len(),
            4
        );
        let go = "package main\n\nimport \"fmt\"\n\ntype T struct{}\n\nfunc (t T) M() {}\nfunc main() {}\n";
        assert_eq!(detect_kind(None, go), ContentKind::Go);
        assert_eq!(
            briefing(go, ContentKind::Go, "r", true, None).entries.len(),
            3
        );
    }

    #[test]
    fn markdown_headings_with_ranges() {
        let md = "# Title\nintro\n## A\na\n```\n# not a heading\n```\n## B\nb\n# Next\nz\n";
        let b = briefing(md, detect_kind(None, md), "r", true, None);
        assert_eq!(b.kind, ContentKind::Markdown);
        let ranges: Vec<(usize, Option<usize>)> =
            b.entries.iter().map(|e| (e.line, e.end_line)).collect();
        assert_eq!(
            ranges,
            vec![(1, Some(9)), (3, Some(7)), (8, Some(9)), (10, Some(11))]
        );
    }

    #[test]
    fn json_key_paths_types_and_lengths() {
        let j = r#"{"users":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"ok":true}"#;
        let b = briefing(j, detect_kind(None, j), "r", true, None);
        let texts: Vec<&str> = b.entries.iter().map(|e| e.text.as_str()).collect();
        assert!(texts.contains(&"$.users: array[2]"), "{texts:?}");
        assert!(texts.contains(&"$.users[0].id: number"));
        assert!(texts.contains(&"$.ok: bool"));
    }

    #[test]
    fn logs_get_head_tail_and_errors() {
        let log: String = (1..=100)
            .map(|i| {
                if i == 50 {
                    "2026-01-01 ERROR disk full\n".to_string()
                } else {
                    format!("line {i} ok\n")
                }
            })
            .collect();
        let b = briefing(&log, detect_kind(None, &log), "r", true, None);
        assert_eq!(b.kind, ContentKind::Text);
        assert!(
            b.entries
                .iter()
                .any(|e| e.line == 50 && e.text.contains("disk full"))
        );
        assert!(
            b.entries
                .iter()
                .any(|e| e.line == 100 && e.text.starts_with("tail"))
        );
        assert!(
            b.entries
                .iter()
                .any(|e| e.line == 1 && e.text.starts_with("head"))
        );
        assert_eq!(
            line_range(&log, 49, 51).as_deref(),
            Ok("line 49 ok\n2026-01-01 ERROR disk full\nline 51 ok\n")
        );
        assert_eq!(line_range(&log, 200, 300), Err(100));
        assert_eq!(
            line_range(&log, 100, usize::MAX).map(|t| t.lines().count()),
            Ok(1)
        );
        assert_eq!(line_range("", 1, 1), Err(0));
    }

    #[test]
    fn a_line_range_keeps_each_line_as_written() {
        let crlf = "one\r\ntwo\r\nthree";
        assert_eq!(line_range(crlf, 2, 3).as_deref(), Ok("two\r\nthree"));
        assert_eq!(line_range(crlf, 1, 99).as_deref(), Ok(crlf));
        assert_eq!(line_range(crlf, 4, 4), Err(3));
        assert_eq!(parse_line_range("2:3"), Ok((2, 3)));
        assert!(parse_line_range("3:2").is_err());
        assert!(parse_line_range("0:2").is_err());
    }

    #[test]
    fn patterns_compile() {
        for k in [
            ContentKind::Rust,
            ContentKind::Python,
            ContentKind::JavaScript,
            ContentKind::Go,
        ] {
            assert!(!definition_pattern(k).unwrap().is_match(""));
        }
        assert!(is_error_line("thread panicked"));
    }
}
