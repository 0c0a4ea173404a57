//! Catalog importers, chosen by content (DESIGN §2.3): routing-guide JSON, an MCP
//! `tools/list` result, an OpenAI `tools` array, BFCL function docs (a list, or BFCL's
//! question JSONL whose `function` lists are pooled).

use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::core::catalog::{Pack, PackMetadata, RoutingGuide, Schema};
use crate::core::error::CoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFormat {
    RoutingGuide,
    McpToolsList,
    OpenAiTools,
    BfclFunctions,
    BfclQuestions,
}

impl fmt::Display for CatalogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CatalogFormat::RoutingGuide => "routing guide",
            CatalogFormat::McpToolsList => "MCP tools/list",
            CatalogFormat::OpenAiTools => "OpenAI tools",
            CatalogFormat::BfclFunctions => "BFCL function docs",
            CatalogFormat::BfclQuestions => "BFCL questions (functions pooled)",
        })
    }
}

#[derive(Debug, Clone)]
pub struct ImportedCatalog {
    pub guide: RoutingGuide,
    pub format: CatalogFormat,
    /// Things worth telling the operator that did not stop the import.
    pub warnings: Vec<String>,
}

const NOT_A_CATALOG: &str = "not a catalog: expected a routing guide {\"packs\",\"pipelines\"}, \
an MCP tools/list result {\"tools\":[…]}, an OpenAI tools array [{\"type\":\"function\",…}] \
or BFCL function docs [{\"name\",\"description\",\"parameters\"}]";

#[derive(Deserialize)]
struct McpList {
    tools: Vec<McpTool>,
}

#[derive(Deserialize)]
struct McpResponse {
    result: McpList,
}

#[derive(Deserialize)]
struct McpTool {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    input_schema: Option<Value>,
    #[serde(rename = "outputSchema", default)]
    output_schema: Option<Value>,
}

#[derive(Deserialize)]
struct OpenAiTool {
    function: FunctionDoc,
}

#[derive(Deserialize)]
struct OpenAiToolList {
    tools: Vec<OpenAiTool>,
}

/// BFCL and OpenAI function docs share this shape; BFCL's types (`dict`, `float`, …) are
/// kept as they are: the schema is carried, not validated.
#[derive(Deserialize)]
struct FunctionDoc {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Deserialize)]
struct BfclQuestion {
    function: Vec<FunctionDoc>,
}

/// Parse catalog text in any supported format. `origin` names the source in errors.
pub fn parse_catalog(text: &str, origin: &str) -> Result<ImportedCatalog, CoreError> {
    if text.trim().is_empty() {
        return Err(CoreError::Content {
            origin: origin.into(),
            message: "is empty".into(),
        });
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(whole) => {
            return parse_jsonl(text, origin).unwrap_or(Err(CoreError::json(origin, text, &whole)));
        }
    };
    let format = detect(&value).ok_or_else(|| CoreError::Content {
        origin: origin.into(),
        message: NOT_A_CATALOG.into(),
    })?;
    entry_names_are_strings(&value, format, origin)?;
    // Typed parse of the original text, so a wrong field is reported with its line and column.
    let typed = |e: serde_json::Error| CoreError::json(origin, text, &e);
    let (guide, format) = match format {
        CatalogFormat::RoutingGuide => (
            (
                serde_json::from_str::<RoutingGuide>(text).map_err(typed)?,
                Folded::default(),
            ),
            format,
        ),
        CatalogFormat::McpToolsList => {
            let (tools, list) = if value.get("result").is_some() {
                let r = serde_json::from_str::<McpResponse>(text).map_err(typed)?;
                (r.result.tools, "result.tools")
            } else if value.is_array() {
                let t = serde_json::from_str::<Vec<McpTool>>(text).map_err(typed)?;
                (t, "")
            } else {
                let t = serde_json::from_str::<McpList>(text).map_err(typed)?;
                (t.tools, "tools")
            };
            let at = |i| format!("{list}[{i}].name");
            (
                packs_to_guide(tools.into_iter().map(mcp_pack), origin, at)?,
                format,
            )
        }
        CatalogFormat::OpenAiTools => {
            let (tools, list) = if value.is_array() {
                let t = serde_json::from_str::<Vec<OpenAiTool>>(text).map_err(typed)?;
                (t, "")
            } else {
                let t = serde_json::from_str::<OpenAiToolList>(text).map_err(typed)?;
                (t.tools, "tools")
            };
            let at = |i| format!("{list}[{i}].function.name");
            let packs = tools.into_iter().map(|t| function_pack(t.function));
            (packs_to_guide(packs, origin, at)?, format)
        }
        CatalogFormat::BfclFunctions => {
            let docs = serde_json::from_str::<Vec<FunctionDoc>>(text).map_err(typed)?;
            let at = |i| format!("[{i}].name");
            (
                packs_to_guide(docs.into_iter().map(function_pack), origin, at)?,
                format,
            )
        }
        CatalogFormat::BfclQuestions => {
            let q = serde_json::from_str::<BfclQuestion>(text).map_err(typed)?;
            let at = |i| format!("function[{i}].name");
            (
                packs_to_guide(q.function.into_iter().map(function_pack), origin, at)?,
                format,
            )
        }
    };
    let (guide, folded) = guide;
    let mut warnings = folded.warnings(origin);
    warnings.extend(validate(&guide, origin)?);
    Ok(ImportedCatalog {
        guide,
        format,
        warnings,
    })
}

/// A list of entries as a file spells it: its path, its items (if a list), and the path to
/// each entry's name within an item.
type EntryList<'a> = (&'a str, Option<&'a Vec<Value>>, &'static [&'static str]);

/// Every entry's name (a pipeline's id) present and a string, said by where the file has
/// it (`tools[0].name`, `[1].function.name`), before the typed parse would say "missing
/// field `name`" at a line and column. A JSON Lines line is named in `origin`
/// (`FILE: line 3`), as every JSON Lines reader names it.
fn entry_names_are_strings(
    value: &Value,
    format: CatalogFormat,
    origin: &str,
) -> Result<(), CoreError> {
    fn list(v: Option<&Value>) -> Option<&Vec<Value>> {
        v.and_then(Value::as_array)
    }
    let top = |key: &'static str| -> (&'static str, Option<&Vec<Value>>) {
        if value.is_array() {
            ("", value.as_array())
        } else {
            (key, list(value.get(key)))
        }
    };
    let lists: Vec<EntryList> = match format {
        CatalogFormat::RoutingGuide => vec![
            ("packs", list(value.get("packs")), &["name"]),
            ("pipelines", list(value.get("pipelines")), &["id"]),
        ],
        CatalogFormat::McpToolsList if value.get("result").is_some() => vec![(
            "result.tools",
            list(value.get("result").and_then(|r| r.get("tools"))),
            &["name"],
        )],
        CatalogFormat::McpToolsList => {
            let (at, items) = top("tools");
            vec![(at, items, &["name"])]
        }
        CatalogFormat::OpenAiTools => {
            let (at, items) = top("tools");
            vec![(at, items, &["function", "name"])]
        }
        CatalogFormat::BfclFunctions => vec![("", value.as_array(), &["name"])],
        CatalogFormat::BfclQuestions => {
            vec![("function", list(value.get("function")), &["name"])]
        }
    };
    let wrong = |at: String, problem: String| CoreError::Field {
        origin: origin.into(),
        field: at,
        problem,
    };
    for (list_at, items, path) in lists {
        for (i, item) in items.into_iter().flatten().enumerate() {
            let mut at = format!("{list_at}[{i}]");
            let mut v = item;
            for key in path {
                let Some(fields) = v.as_object() else {
                    return Err(wrong(at, format!("is {}; expected an object", in_words(v))));
                };
                at = format!("{at}.{key}");
                v = fields
                    .get(*key)
                    .ok_or_else(|| wrong(at.clone(), "is missing".into()))?;
            }
            if !v.is_string() {
                return Err(wrong(at, format!("is {}; expected a string", in_words(v))));
            }
            // The entry's own fields: inside `function` for an OpenAI tool (the name's check
            // has shown every object on its path is one).
            let (fields, at) = match format {
                CatalogFormat::OpenAiTools => {
                    (item.get("function"), format!("{list_at}[{i}].function"))
                }
                _ => (Some(item), format!("{list_at}[{i}]")),
            };
            // The description, where given, is text (tester 36 F5: `"description": 7` was told
            // by line and column only). Null reads as none.
            if let Some(d) = fields.and_then(|f| f.get("description"))
                && !(d.is_string() || d.is_null())
            {
                return Err(wrong(
                    format!("{at}.description"),
                    format!("is {}; expected a string", in_words(d)),
                ));
            }
            // The input schema, where the form has one, is a JSON Schema object when given
            // (tester 35 F7: `"parameters": "x"` was sent as `"input_schema": "x"`; tester 36
            // F4: BFCL's function docs too).
            let schema_key = match format {
                CatalogFormat::OpenAiTools
                | CatalogFormat::BfclFunctions
                | CatalogFormat::BfclQuestions => Some("parameters"),
                CatalogFormat::McpToolsList => Some("inputSchema"),
                CatalogFormat::RoutingGuide => None,
            };
            if let Some(key) = schema_key
                && let Some(schema) = fields.and_then(|f| f.get(key))
            {
                check_schema(schema, &format!("{at}.{key}")).map_err(|(at, why)| wrong(at, why))?;
            }
        }
    }
    Ok(())
}

/// An entry's input schema, at `at`: a JSON Schema object, whose `properties` (where given)
/// is an object and whose `required` is a list of names (tester 36 F5: `"properties": 5` and
/// `"required": "q"` were read and sent as given, for the provider to refuse). Deeper
/// levels are the provider's to judge. The field at fault and what was found, if not.
fn check_schema(schema: &Value, at: &str) -> Result<(), (String, String)> {
    if !schema.is_object() {
        return Err((
            at.to_string(),
            format!("is {}; expected a JSON Schema object", in_words(schema)),
        ));
    }
    if let Some(p) = schema.get("properties")
        && !p.is_object()
    {
        return Err((
            format!("{at}.properties"),
            format!("is {}; expected an object of parameters", in_words(p)),
        ));
    }
    if let Some(r) = schema.get("required") {
        let names = r.as_array().map(|a| a.iter().position(|n| !n.is_string()));
        match names {
            None => {
                return Err((
                    format!("{at}.required"),
                    format!("is {}; expected a list of parameter names", in_words(r)),
                ));
            }
            Some(Some(i)) => {
                return Err((
                    format!("{at}.required[{i}]"),
                    format!("is {}; expected a parameter name", in_words(&r[i])),
                ));
            }
            Some(None) => {}
        }
    }
    Ok(())
}

/// A JSON value as an error says what was found: a short scalar as written, else its kind.
fn in_words(v: &Value) -> String {
    const SHOWN: usize = 40;
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let n = n.to_string();
            if n.len() > SHOWN {
                "a number".into()
            } else {
                n
            }
        }
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// An OpenAI tool: it has a `function`, or says it is one (`"type": "function"`), so that
/// one without its `function` is told so in OpenAI's words (tester 35 F7: it was read as an
/// MCP tool and said `tools[0].name is missing`).
fn is_openai_tool(tool: &Value) -> bool {
    tool.get("function").is_some() || tool.get("type").and_then(Value::as_str) == Some("function")
}

fn detect(value: &Value) -> Option<CatalogFormat> {
    let first_of = |v: &Value| v.as_array().and_then(|a| a.first()).cloned();
    match value {
        Value::Object(o) => {
            if o.get("packs").is_some_and(Value::is_array)
                || o.get("pipelines").is_some_and(Value::is_array)
            {
                Some(CatalogFormat::RoutingGuide)
            } else if let Some(tools) = o.get("tools").filter(|t| t.is_array()) {
                match first_of(tools) {
                    Some(t) if is_openai_tool(&t) => Some(CatalogFormat::OpenAiTools),
                    _ => Some(CatalogFormat::McpToolsList),
                }
            } else if o
                .get("result")
                .and_then(|r| r.get("tools"))
                .is_some_and(Value::is_array)
            {
                Some(CatalogFormat::McpToolsList)
            } else if o.get("function").is_some_and(Value::is_array) {
                Some(CatalogFormat::BfclQuestions)
            } else {
                None
            }
        }
        Value::Array(items) => {
            let first = items.first()?;
            if is_openai_tool(first) {
                Some(CatalogFormat::OpenAiTools)
            } else if first.get("inputSchema").is_some() {
                Some(CatalogFormat::McpToolsList)
            } else if first.get("name").is_some() {
                Some(CatalogFormat::BfclFunctions)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// JSON Lines of BFCL questions: each line's `function` list is pooled. Returns `None` when
/// the text does not look like JSON Lines at all (so the whole-text error is reported).
fn parse_jsonl(text: &str, origin: &str) -> Option<Result<ImportedCatalog, CoreError>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next()?;
    let first_value: Value = serde_json::from_str(first).ok()?;
    first_value.get("function")?;
    let mut docs: Vec<FunctionDoc> = Vec::new();
    // Where each pooled function came from: its line and its place in that line's list.
    let mut places: Vec<(usize, usize)> = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        if let Ok(v) = serde_json::from_str::<Value>(line)
            && let Err(e) = entry_names_are_strings(
                &v,
                CatalogFormat::BfclQuestions,
                &format!("{origin}: line {}", n + 1),
            )
        {
            return Some(Err(e));
        }
        match serde_json::from_str::<BfclQuestion>(line) {
            Ok(q) => {
                places.extend((0..q.function.len()).map(|i| (n + 1, i)));
                docs.extend(q.function);
            }
            Err(e) => return Some(Err(CoreError::json_line(origin, n + 1, line, &e))),
        }
    }
    // The line before the field, as every JSON Lines reader says it (tester 48 nit: it was
    // inside the quoted path, `'function[0].name (line 3)'`).
    let at = |k: usize| {
        let (line, i) = places.get(k).copied().unwrap_or((0, k));
        (
            format!("{origin}: line {line}"),
            format!("function[{i}].name"),
        )
    };
    // Pooled BFCL questions repeat their functions by design: folded without a word.
    let pooled = docs.into_iter().map(function_pack);
    let guide = match packs_folded(pooled, at, FoldBy::NameAndDescription) {
        Ok((guide, _)) => guide,
        Err(e) => return Some(Err(e)),
    };
    Some(validate(&guide, origin).map(|warnings| ImportedCatalog {
        guide,
        format: CatalogFormat::BfclQuestions,
        warnings,
    }))
}

fn mcp_pack(t: McpTool) -> Pack {
    let description = t.description.or(t.title).unwrap_or_default();
    Pack {
        name: t.name,
        description,
        metadata: PackMetadata {
            input_schema: t.input_schema.map(Schema::Full),
            output_schema: t.output_schema.map(Schema::Full),
            ..PackMetadata::default()
        },
    }
}

fn function_pack(f: FunctionDoc) -> Pack {
    Pack {
        name: f.name,
        description: f.description.unwrap_or_default(),
        metadata: PackMetadata {
            input_schema: f.parameters.map(Schema::Full),
            ..PackMetadata::default()
        },
    }
}

/// One pack per distinct name and description (pooled BFCL lists repeat functions). An
/// entry without a name is refused here, before repeats are dropped, by where it is in the
/// file: `name_at(i)` is the path of the i-th entry's name as the file spells it
/// (`tools[0].name`, `[2].function.name`), never the routing guide's `packs[…]`, which
/// such a file does not have.
fn packs_to_guide(
    packs: impl Iterator<Item = Pack>,
    origin: &str,
    name_at: impl Fn(usize) -> String,
) -> Result<(RoutingGuide, Folded), CoreError> {
    packs_folded(
        packs,
        |i| (origin.to_string(), name_at(i)),
        FoldBy::WholeEntry,
    )
}

/// What makes two entries one when a catalog gives an entry again.
#[derive(Clone, Copy, PartialEq)]
enum FoldBy {
    /// The whole entry as sent: name, description, schema and metadata (tester 10 T10-12:
    /// two entries alike but for their schema were folded into the first).
    WholeEntry,
    /// Name and description: a pool of BFCL questions gives one function once per question
    /// that offers it, its parameters sometimes worded apart; the pool is one catalog of
    /// functions to rank, as `eval rank` has always measured it.
    NameAndDescription,
}

/// `place(i)`: where the i-th entry is (the file, or `FILE: line N` of JSON Lines) and the
/// path of its name there.
fn packs_folded(
    packs: impl Iterator<Item = Pack>,
    place: impl Fn(usize) -> (String, String),
    fold: FoldBy,
) -> Result<(RoutingGuide, Folded), CoreError> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut kept = Vec::new();
    let mut folded = Folded::default();
    for (i, p) in packs.enumerate() {
        if p.name.trim().is_empty() {
            let (origin, field) = place(i);
            return Err(CoreError::Field {
                origin,
                field,
                problem: "is empty".into(),
            });
        }
        let key = match fold {
            FoldBy::WholeEntry => serde_json::to_string(&p).unwrap_or_else(|_| format!("{p:?}")),
            FoldBy::NameAndDescription => format!("{}\n{}", p.name, p.description),
        };
        if seen.insert(key) {
            kept.push(p);
        } else {
            folded.add(&p.name);
        }
    }
    let guide = RoutingGuide {
        packs: kept,
        pipelines: Vec::new(),
    };
    Ok((guide, folded))
}

/// Entries given again word for word (the whole entry as sent), kept once: per name, in
/// catalog order, how many copies were folded.
#[derive(Default)]
struct Folded(Vec<(String, usize)>, HashMap<String, usize>);

impl Folded {
    fn add(&mut self, name: &str) {
        match self.1.get(name) {
            Some(&at) => self.0[at].1 += 1,
            None => {
                self.1.insert(name.to_string(), self.0.len());
                self.0.push((name.to_string(), 1));
            }
        }
    }

    /// One warning per folded name (the first [`REPEATED_NAMED`]), then one for the rest:
    /// a server listing a tool twice is worth knowing of, though one copy is what is sent
    /// (tester 9 T9-8: they were folded without a word).
    fn warnings(&self, origin: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .0
            .iter()
            .take(REPEATED_NAMED)
            .map(|(name, extra)| {
                format!(
                    "{origin}: '{name}' is listed {} times word for word (the whole entry as sent); sent once",
                    extra + 1
                )
            })
            .collect();
        if let Some(more) = self.0.len().checked_sub(REPEATED_NAMED).filter(|&n| n > 0) {
            out.push(format!(
                "{origin}: {more} more names are listed more than once word for word; each sent once"
            ));
        }
        out
    }
}

/// How many repeated names are warned of one by one; the rest are one warning's count.
const REPEATED_NAMED: usize = 20;

/// Names are what plans refer to: they must be present. Dangling step references and
/// duplicate names are worth a warning, not a refusal.
fn validate(guide: &RoutingGuide, origin: &str) -> Result<Vec<String>, CoreError> {
    let field = |f: String, problem: &str| CoreError::Field {
        origin: origin.into(),
        field: f,
        problem: problem.into(),
    };
    for (i, p) in guide.packs.iter().enumerate() {
        if p.name.trim().is_empty() {
            return Err(field(format!("packs[{i}].name"), "is empty"));
        }
    }
    for (i, p) in guide.pipelines.iter().enumerate() {
        if p.id.trim().is_empty() {
            return Err(field(format!("pipelines[{i}].id"), "is empty"));
        }
    }
    // How many spellings of one name a note shows.
    const SPELLINGS_SHOWN: usize = 4;
    let mut warnings = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    // One warning per name given twice or more, with its count, in catalog order. Names are
    // counted by how they print: trimmed (a plan step's tool is) and NFC-normalised (a
    // precomposed `é` and `e` + U+0301 are one name on every screen and to the model).
    // Per key: the count, the first spelling (the one named), the spellings seen.
    let mut times: HashMap<String, (usize, &str, HashSet<&str>)> = HashMap::new();
    let mut repeated: Vec<String> = Vec::new();
    for (name, _) in guide.entry_names() {
        names.insert(name);
        let key = crate::core::text::printed_alike(name);
        match times.get_mut(&key) {
            Some((n, _, spellings)) => {
                if *n == 1 {
                    repeated.push(key);
                }
                *n += 1;
                spellings.insert(name);
            }
            None => {
                times.insert(key, (1, name, HashSet::from([name])));
            }
        }
    }
    for (key, (n, name, spellings)) in repeated
        .iter()
        .take(REPEATED_NAMED)
        .filter_map(|key| times.get(key).map(|t| (key, t)))
    {
        // Spelled more than one way, the name is headed as it prints (the ligature `ﬁ`
        // as `fi`), not as whichever spelling came first (tester 38 F6); each spelling
        // follows, spelled out.
        let headed = if spellings.len() > 1 { key } else { *name };
        let alike = match spellings.len() {
            1 => String::new(),
            ways => {
                // Each spelling with what sets it apart escaped (`send\u{fe0f}mail`): a
                // variation selector prints as itself in a quoted name (tester 11 T11-8).
                let mut shown: Vec<String> = spellings
                    .iter()
                    .map(|s| crate::core::text::spelled_out(s))
                    .collect();
                shown.sort();
                let more = shown.len().saturating_sub(SPELLINGS_SHOWN);
                shown.truncate(SPELLINGS_SHOWN);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                format!(
                    "spelled {ways} ways that print alike: {}{more}; ",
                    shown.join(", ")
                )
            }
        };
        warnings.push(format!(
            "{origin}: {} appears {n} times ({alike}each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
            // Escaped as every quoted name is (tester 36 F7: a tab printed raw here).
            crate::core::terminal_text::quoted(headed)
        ));
    }
    // A name mixing scripts whose letters print alike reads as another name (tester 19 F4:
    // `web_s\u{435}arch` beside `web_search`): named spelled out, at most REPEATED_NAMED.
    let mixed: Vec<(&str, (&str, &str))> = guide
        .entry_names()
        .filter_map(|(name, _)| crate::core::text::mixed_scripts(name).map(|m| (name, m)))
        .collect();
    for (name, (a, b)) in mixed.iter().take(REPEATED_NAMED) {
        warnings.push(format!(
            "{origin}: '{}' mixes {a} and {b} letters, which print alike: it reads as another name to an operator and to a model",
            crate::core::text::spelled_out(name)
        ));
    }
    if mixed.len() > REPEATED_NAMED {
        warnings.push(format!(
            "{origin}: {} more names mix Latin, Greek or Cyrillic letters",
            mixed.len() - REPEATED_NAMED
        ));
    }
    if let Some(more) = repeated
        .len()
        .checked_sub(REPEATED_NAMED)
        .filter(|&n| n > 0)
    {
        warnings.push(format!(
            "{origin}: {more} more names appear more than once (each is kept as an entry, sent or cut by the budget like any other; a plan naming one cannot say which)"
        ));
    }
    for p in &guide.pipelines {
        for s in &p.metadata.steps {
            if !s.pack.is_empty() && !names.contains(s.pack.as_str()) {
                warnings.push(format!(
                    "{origin}: pipeline '{}' step '{}' names unknown pack '{}'",
                    p.id, s.id, s.pack
                ));
            }
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 6 F2: 10,000 tools named `dup` gave 9,999 identical warnings.
    #[test]
    fn a_repeated_name_is_one_warning_with_its_count() {
        let tools: Vec<String> = (0..10_000)
            .map(|i| format!(r#"{{"name":"dup","description":"Copy {i}."}}"#))
            .chain([
                r#"{"name":"a"}"#.into(),
                r#"{"name":"a","description":"B."}"#.into(),
            ])
            .collect();
        let text = format!("{{\"tools\":[{}]}}", tools.join(","));
        let w = parse_catalog(&text, "c.json").unwrap().warnings;
        assert_eq!(
            w,
            vec![
                "c.json: 'dup' appears 10000 times (each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
                "c.json: 'a' appears 2 times (each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
            ]
        );
        // 5,000 names given twice each: twenty named, the rest counted in one more.
        let pairs: Vec<String> = (0..5_000)
            .flat_map(|i| {
                [
                    format!(r#"{{"name":"t{i}","description":"One."}}"#),
                    format!(r#"{{"name":"t{i}","description":"Two."}}"#),
                ]
            })
            .collect();
        let text = format!("{{\"tools\":[{}]}}", pairs.join(","));
        let w = parse_catalog(&text, "c.json").unwrap().warnings;
        assert_eq!(w.len(), REPEATED_NAMED + 1);
        assert!(w[0].starts_with("c.json: 't0' appears 2 times"), "{}", w[0]);
        assert_eq!(
            w[REPEATED_NAMED],
            "c.json: 4980 more names appear more than once (each is kept as an entry, sent or cut by the budget like any other; a plan naming one cannot say which)"
        );
    }

    /// Tester 7 T7-11: `café` precomposed and as `e` + U+0301, and `dup ` with a trailing
    /// space, print as the names beside them but were not counted as repeats.
    /// Tester 9 T9-8: an entry given twice word for word was folded into one without a
    /// word. It is still sent once, and said so; a pooled BFCL file, which repeats its
    /// functions by design, is folded silently.
    #[test]
    fn an_entry_given_twice_word_for_word_is_sent_once_and_said() {
        let tool = r#"{"name":"dup","description":"Search notes.","inputSchema":{"type":"object","properties":{"q":{}}}}"#;
        let text =
            format!(r#"{{"tools":[{tool},{{"name":"x","description":"X."}},{tool},{tool}]}}"#);
        let c = parse_catalog(&text, "c.json").unwrap();
        assert_eq!(c.guide.packs.len(), 2);
        assert_eq!(
            c.warnings,
            ["c.json: 'dup' is listed 3 times word for word (the whole entry as sent); sent once"]
        );
        // Tester 10 T10-12: alike but for the schema is not word for word: both are sent,
        // under the repeated-name warning. (An MCP annotation is not part of what is sent.)
        {
            let other = r#"{"name":"dup","description":"Search notes.","inputSchema":{"type":"object","properties":{"z":{"type":"integer"}}}}"#;
            let text = format!(r#"{{"tools":[{tool},{other}]}}"#);
            let c = parse_catalog(&text, "c.json").unwrap();
            assert_eq!(c.guide.packs.len(), 2, "{other}");
            assert!(
                c.warnings.len() == 1 && c.warnings[0].contains("'dup' appears 2 times"),
                "{other}: {:?}",
                c.warnings
            );
        }
    }

    #[test]
    fn a_name_with_an_invisible_character_prints_alike() {
        let text = r#"{"tools":[{"name":"xy","description":"A."},{"name":"x\u200by","description":"B."}]}"#;
        let c = parse_catalog(text, "c.json").unwrap();
        assert_eq!(c.guide.packs.len(), 2, "both sent");
        assert!(
            c.warnings.len() == 1 && c.warnings[0].contains("'xy' appears 2 times (spelled 2 ways"),
            "{:?}",
            c.warnings
        );
    }

    /// Tester 11 T11-8: an interlinear annotation anchor (U+FFF9) printed as nothing and got
    /// no note; a variation selector after a letter was noted but quoted as itself.
    #[test]
    fn every_invisible_spelling_is_noted_and_shown_escaped() {
        for (c, shown) in [
            ('\u{fff9}', "send\\u{fff9}mail"),
            ('\u{fe0f}', "send\\u{fe0f}mail"),
        ] {
            let text = format!(
                r#"{{"tools":[{{"name":"sendmail","description":"A."}},{{"name":"send{c}mail","description":"B."}}]}}"#
            );
            let c = parse_catalog(&text, "c.json").unwrap();
            assert_eq!(
                c.warnings,
                [format!(
                    "c.json: 'sendmail' appears 2 times (spelled 2 ways that print alike: {shown}, sendmail; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)"
                )]
            );
        }
        assert_eq!(
            crate::core::terminal_text::for_terminal("send\u{fff9}mail"),
            "send\\u{fff9}mail"
        );
    }

    /// Tester 19 F4: `web_s\u{435}arch` (a Cyrillic `е`) prints as `web_search` and got no
    /// note. A name mixing Latin, Greek or Cyrillic letters is named, spelled out; a name in
    /// one script, or in another script altogether, is not.
    #[test]
    fn a_name_mixing_scripts_that_print_alike_is_named() {
        let text = r#"{"tools":[
            {"name":"web_search","description":"A."},
            {"name":"web_s\u0435arch","description":"B."},
            {"name":"\u043f\u043e\u0438\u0441\u043a","description":"C."},
            {"name":"\u691c\u7d22_search","description":"D."},
            {"name":"caf\u00e9","description":"E."},
            {"name":"\u00b5s_timer","description":"F."},
            {"name":"\u03bcs_clock","description":"G."},
            {"name":"\uff46\u0456le","description":"H."}]}"#;
        let c = parse_catalog(text, "c.json").unwrap();
        let mixes = |name: &str, a: &str, b: &str| {
            format!(
                "c.json: '{name}' mixes {a} and {b} letters, which print alike: it reads as another name to an operator and to a model"
            )
        };
        // `web_s\u{435}arch` prints as `web_search` too, so the two are one name spelled two
        // ways (tester 39 F4). The micro sign prints as the Greek mu (tester 38 F6: only
        // `\u{3bc}s_clock` was noted), and fullwidth Latin is Latin.
        assert_eq!(
            c.warnings,
            [
                "c.json: 'web_search' appears 2 times (spelled 2 ways that print alike: web_s\\u{435}arch, web_search; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)".to_string(),
                mixes("web_s\\u{435}arch", "Latin", "Cyrillic"),
                mixes("\\u{b5}s_timer", "Greek", "Latin"),
                mixes("\\u{3bc}s_clock", "Greek", "Latin"),
                mixes("\\u{ff46}\\u{456}le", "Latin", "Cyrillic"),
            ]
        );
    }

    #[test]
    fn names_that_print_alike_are_counted_as_repeats() {
        let text = r#"{"tools":[
            {"name":"caf\u00e9","description":"Search cafes."},
            {"name":"cafe\u0301","description":"Delete all cafes."},
            {"name":"dup","description":"One."},{"name":"dup","description":"Two."},
            {"name":"dup","description":"Three."},{"name":"dup ","description":"Four."},
            {"name":"Dup","description":"Five."},
            {"name":"\ufb01le_read","description":"Six."},
            {"name":"file_read","description":"Seven."}]}"#;
        let c = parse_catalog(text, "c.json").unwrap();
        assert_eq!(
            c.warnings,
            vec![
                "c.json: 'caf\u{e9}' appears 2 times (spelled 2 ways that print alike: caf\\u{e9}, cafe\\u{301}; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
                "c.json: 'dup' appears 4 times (spelled 2 ways that print alike: dup, dup\\u{20}; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
                // Headed as it prints, not as the ligature first in the file (tester 38 F6).
                "c.json: 'file_read' appears 2 times (spelled 2 ways that print alike: \\u{fb01}le_read, file_read; each is kept as an entry, sent or cut by the budget like any other; a plan naming it cannot say which)",
            ]
        );
        // Nothing merged or renamed: every entry is sent as its file spells it.
        let names: Vec<&str> = c.guide.packs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "caf\u{e9}",
                "cafe\u{301}",
                "dup",
                "dup",
                "dup",
                "dup ",
                "Dup",
                "\u{fb01}le_read",
                "file_read"
            ]
        );
    }

    /// Tester 7 T7-13: an entry with no name, or a name that is not a string, was told in
    /// serde's words ("line 1, column 94: missing field `name`"); an empty one already was
    /// named as the file spells it.
    #[test]
    fn a_missing_or_mistyped_name_is_named_as_the_file_spells_it() {
        for (text, said) in [
            (
                r#"[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"description":"x"}}]"#,
                "c.json: field '[1].function.name' is missing",
            ),
            (
                r#"{"tools":[{"description":"x"}]}"#,
                "c.json: field 'tools[0].name' is missing",
            ),
            // Tester 35 F7: a tool that says it is OpenAI's is told in OpenAI's words, and a
            // schema that is no object is refused where it stands.
            (
                r#"{"tools":[{"type":"function"}]}"#,
                "c.json: field 'tools[0].function' is missing",
            ),
            (
                r#"{"tools":[{"type":"function","function":{"name":"a","parameters":"x"}}]}"#,
                "c.json: field 'tools[0].function.parameters' is a string; expected a JSON Schema object",
            ),
            (
                r#"[{"type":"function","function":{"name":"a","parameters":{}}},{"type":"function","function":{"name":"b","parameters":[1]}}]"#,
                "c.json: field '[1].function.parameters' is an array; expected a JSON Schema object",
            ),
            (
                r#"{"tools":[{"name":"a","inputSchema":null}]}"#,
                "c.json: field 'tools[0].inputSchema' is null; expected a JSON Schema object",
            ),
            (
                r#"[{"type":"function","function":{"name":"a","description":7}}]"#,
                "c.json: field '[0].function.description' is 7; expected a string",
            ),
            (
                r#"{"tools":[{"name":"a","description":["x"],"inputSchema":{}}]}"#,
                "c.json: field 'tools[0].description' is an array; expected a string",
            ),
            (
                r#"[{"name":"a","description":"d","parameters":"s"}]"#,
                "c.json: field '[0].parameters' is a string; expected a JSON Schema object",
            ),
            (
                r#"{"tools":[{"name":"a","inputSchema":{"type":"object","properties":5}}]}"#,
                "c.json: field 'tools[0].inputSchema.properties' is 5; expected an object of parameters",
            ),
            (
                r#"[{"type":"function","function":{"name":"a","parameters":{"required":"q"}}}]"#,
                "c.json: field '[0].function.parameters.required' is a string; expected a list of parameter names",
            ),
            (
                r#"[{"name":"a","description":"d","parameters":{"properties":{},"required":["x",3]}}]"#,
                "c.json: field '[0].parameters.required[1]' is 3; expected a parameter name",
            ),
            (
                r#"{"tools":[{"name":5}]}"#,
                "c.json: field 'tools[0].name' is 5; expected a string",
            ),
            (
                r#"{"tools":[{"name":"a"},{"name":{"x":1}}]}"#,
                "c.json: field 'tools[1].name' is an object; expected a string",
            ),
            (
                r#"{"result":{"tools":[{"name":"a"},{"name":null}]}}"#,
                "c.json: field 'result.tools[1].name' is null; expected a string",
            ),
            (
                r#"{"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":[1]}]}"#,
                "c.json: field 'tools[1].function' is an array; expected an object",
            ),
            (
                r#"{"tools":[{"name":"a"},7]}"#,
                "c.json: field 'tools[1]' is 7; expected an object",
            ),
            (
                r#"[{"name":"a"},{"description":"b"}]"#,
                "c.json: field '[1].name' is missing",
            ),
            (
                r#"{"packs":[{"name":"a"},{"name":true}],"pipelines":[]}"#,
                "c.json: field 'packs[1].name' is true; expected a string",
            ),
            (
                r#"{"packs":[],"pipelines":[{"name":"p"}]}"#,
                "c.json: field 'pipelines[0].id' is missing",
            ),
            (
                r#"{"function":[{"description":"q"}]}"#,
                "c.json: field 'function[0].name' is missing",
            ),
        ] {
            let err = parse_catalog(text, "c.json").err().map(|e| e.to_string());
            assert_eq!(err.as_deref(), Some(said), "{text}");
        }
        // BFCL questions as JSON Lines: the line is said too.
        let text =
            "{\"function\":[{\"name\":\"a\"}]}\n{\"function\":[{\"name\":\"b\"},{\"name\":[]}]}\n";
        let err = parse_catalog(text, "q.jsonl").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("q.jsonl: line 2: field 'function[1].name' is an array; expected a string")
        );
        // The line is said where every JSON Lines reader says it, before the field, not
        // inside its quoted path (tester 48 nit).
        let text = "{\"function\":[{\"name\":\"a\"}]}\n\n{\"function\":[{\"name\":\"b\",\"description\":0}]}\n";
        let err = parse_catalog(text, "q.jsonl").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("q.jsonl: line 3: field 'function[0].description' is 0; expected a string")
        );
    }

    #[test]
    fn detects_each_format_by_content() {
        let rg = r#"{"packs":[{"name":"a","description":"A."}],"pipelines":[]}"#;
        assert_eq!(
            parse_catalog(rg, "x").unwrap().format,
            CatalogFormat::RoutingGuide
        );
        let mcp = r#"{"tools":[{"name":"read_file","description":"Read.","inputSchema":{"type":"object","properties":{"path":{}}}}]}"#;
        let m = parse_catalog(mcp, "x").unwrap();
        assert_eq!(m.format, CatalogFormat::McpToolsList);
        assert_eq!(
            m.guide.packs[0]
                .metadata
                .input_schema
                .as_ref()
                .unwrap()
                .field_names(),
            Some(vec!["path".to_string()])
        );
        let rpc = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{}}]}}"#;
        assert_eq!(
            parse_catalog(rpc, "x").unwrap().format,
            CatalogFormat::McpToolsList
        );
        let oa = r#"[{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object"}}}]"#;
        assert_eq!(
            parse_catalog(oa, "x").unwrap().format,
            CatalogFormat::OpenAiTools
        );
        let bfcl = r#"[{"name":"f","description":"F.","parameters":{"type":"dict","properties":{"x":{"type":"float"}}}}]"#;
        assert_eq!(
            parse_catalog(bfcl, "x").unwrap().format,
            CatalogFormat::BfclFunctions
        );
        let jsonl = "{\"id\":\"1\",\"function\":[{\"name\":\"f\",\"description\":\"F\"}]}\n{\"id\":\"2\",\"function\":[{\"name\":\"f\",\"description\":\"F\"},{\"name\":\"g\"}]}";
        let j = parse_catalog(jsonl, "x").unwrap();
        assert_eq!(j.format, CatalogFormat::BfclQuestions);
        assert_eq!(j.guide.packs.len(), 2);
    }

    #[test]
    fn truncated_file_names_position() {
        let err = parse_catalog("{\n \"packs\": [\n  {\"name\": \"a\",", "cat.json")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cat.json: line 3, column"), "{err}");
    }

    #[test]
    fn wrong_type_names_position() {
        // (A name, a description or a schema of the wrong type is named by its path: see
        // a_missing_or_mistyped_name_is_named_as_the_file_spells_it.)
        let err = parse_catalog(
            "{\"packs\": [\n{\"name\": \"a\", \"metadata\": 5}]}",
            "cat.json",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("cat.json: line 2"), "{err}");
        let err = parse_catalog(
            "{\"packs\": [\n{\"name\": \"a\", \"description\": 5}]}",
            "cat.json",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "cat.json: field 'packs[0].description' is 5; expected a string"
        );
    }

    #[test]
    fn unknown_shape_says_what_was_expected() {
        let err = parse_catalog("{\"hello\": 1}", "cat.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a catalog"), "{err}");
        let err = parse_catalog("   ", "cat.json").unwrap_err().to_string();
        assert!(err.contains("is empty"), "{err}");
    }

    #[test]
    fn bad_jsonl_line_is_named() {
        let jsonl = "{\"function\":[{\"name\":\"f\"}]}\n{\"function\":[{\"name\":\"g\"}]}\n{\"function\": [oops]}\n";
        let err = parse_catalog(jsonl, "q.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("q.jsonl: line 3"), "{err}");
    }

    #[test]
    fn empty_names_refused_and_dangling_steps_warned() {
        let err = parse_catalog(r#"{"packs":[{"name":" "}]}"#, "c")
            .unwrap_err()
            .to_string();
        assert!(err.contains("packs[0].name"), "{err}");
        // Every other format names the entry as its file spells it (tester 6 F16: an MCP
        // tools/list file was told of `packs[0].name`), counting repeats the pool drops.
        let dup = r#"{"name":"a","description":"x"},{"name":"a","description":"x"}"#;
        for (text, path) in [
            (format!(r#"{{"tools":[{dup},{{"name":"","description":"x"}}]}}"#), "'tools[2].name'"),
            (format!(r#"[{dup},{{"name":" "}}]"#), "'[2].name'"),
            (
                format!(r#"{{"result":{{"tools":[{dup},{{"name":"","inputSchema":{{}}}}]}}}}"#),
                "'result.tools[2].name'",
            ),
            (
                r#"[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":""}}]"#
                    .to_string(),
                "'[1].function.name'",
            ),
            (
                "{\"function\":[{\"name\":\"f\"}]}\n{\"function\":[{\"name\":\"g\"},{\"name\":\"\"}]}\n"
                    .to_string(),
                "line 2: field 'function[1].name'",
            ),
        ] {
            let err = parse_catalog(&text, "c").unwrap_err().to_string();
            let path = if path.starts_with("line") {
                path.to_string()
            } else {
                format!("field {path}")
            };
            assert_eq!(err, format!("c: {path} is empty"), "{text}");
        }
        let w = parse_catalog(
            r#"{"pipelines":[{"id":"p","metadata":{"steps":[{"id":"s","pack":"ghost"}]}}]}"#,
            "c",
        )
        .unwrap();
        assert!(w.warnings[0].contains("ghost"));
    }
}
