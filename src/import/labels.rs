//! Labelled intents for `eval rank`: BFCL questions with their ground truth, NESTFUL
//! questions with the calls that answer them and their tool spec, or the operator's own
//! JSONL of `{"intent": "...", "expected": ["tool", …]}`.

use crate::core::terminal_text::ShownPath;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::core::catalog::{Pack, PackMetadata, RoutingGuide, Schema};
use crate::core::error::CoreError;
use crate::import::catalog::parse_catalog;
use crate::import::read_text;

/// One intent and the tools that should rank first for it.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledIntent {
    pub id: String,
    pub intent: String,
    /// Distinct tool names, in the order the answer calls them.
    pub expected: Vec<String>,
    /// What the tune/test split hashes: the source's own id, else the intent's text.
    pub key: String,
}

/// A pooled catalog and its labelled questions.
#[derive(Debug, Default)]
pub struct RankSet {
    pub guide: RoutingGuide,
    pub cases: Vec<LabelledIntent>,
    /// What loading had to settle, said in the report: duplicate entries dropped, names
    /// several entries share, expected tools the pool does not have.
    pub notes: Vec<String>,
}

/// Names in order of first appearance, each once (a set, not a scan of the list: tester's
/// F3, 200,000 names took minutes).
fn distinct(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::new();
    names
        .into_iter()
        .filter(|n| !seen.contains(n) && seen.insert(n.clone()))
        .collect()
}

/// How many names a note names before it counts the rest.
const NAMES_SHOWN: usize = 8;

/// The first [`NAMES_SHOWN`] of `names` joined, then how many more there are: `a, b and
/// 12 more` (tester's F3: a note listing 20,000 names was 150 KB on one line).
fn named_few(names: &[String]) -> String {
    let shown = names[..names.len().min(NAMES_SHOWN)].join(", ");
    match names.len().saturating_sub(NAMES_SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// A question as its file gave it, with the line (or, in a JSON array, the entry) it
/// stands at, for [`settle`]'s messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub at: usize,
    pub case: LabelledIntent,
}

/// How [`settle`] names a set's file, its places and its pool in what it says.
pub struct SetSource<'a> {
    /// The file the questions came from.
    pub origin: &'a str,
    /// What a place in it is: `line` (JSON Lines) or `entry` (a JSON array), and the plural.
    pub unit: &'a str,
    pub units: &'a str,
    /// The pool the expected tools are looked up in, as a note names it: `the spec`,
    /// `the pooled functions`, `the catalog FILE`.
    pub pool: &'a str,
    /// What the expected tools are called: `expected calls` (BFCL, NESTFUL: the calls
    /// that answer) or `expected tools` (the operator's labels).
    pub expected: &'a str,
}

/// The one rule every labelled set keeps, whatever its source (`--bfcl`, `--nestful`,
/// `--labels`, the suite; tester 11 T11-6):
/// - a question whose intent is empty (or only spaces), or holds no word the ranker reads
///   (function words, invisible characters), is refused, naming its place: there is nothing
///   to rank, and catalog order would decide;
/// - two questions with one id, or ids that print alike
///   ([`printed_alike`](crate::core::text::printed_alike): `café` NFC and NFD), are refused,
///   naming both places: the split hashes the id, so they are one question twice;
/// - an expected tool the pool lacks is dropped from the question's expected tools, and a
///   note names it (the first few, and how many more) and the pool (it could never be
///   found); a pool's name counts as the expected tool when they print alike
///   ([`printed_alike`](crate::core::text::printed_alike): `dup ` in a catalog is `dup`),
///   as the ranking counts them;
/// - a question left with no expected tool, or that named none, is left out of every
///   figure (the halves, the confidence line, `--per-question`), and a note says so;
/// - a set with no question left is refused.
pub fn settle(
    placed: Vec<Placed>,
    guide: &RoutingGuide,
    source: &SetSource,
) -> Result<(Vec<LabelledIntent>, Vec<String>), CoreError> {
    use crate::core::terminal_text::quoted;
    use crate::core::text::{printed_alike, spelled_out};
    let refuse = |message: String| CoreError::Content {
        origin: source.origin.into(),
        message,
    };
    let unit = source.unit;
    let mut seen: HashMap<String, (usize, String)> = HashMap::new();
    for p in &placed {
        if p.case.intent.trim().is_empty() {
            return Err(refuse(format!(
                "{unit} {}: the intent of {} is empty: there is nothing to rank",
                p.at,
                quoted(&p.case.id)
            )));
        }
        // An intent of invisible characters or function words only gives the ranker no
        // word: it would be "ranked" by catalog order and score as if read (tester 12 T12-11).
        let mut has_term = false;
        crate::core::text::for_each_term(&p.case.intent, |_| has_term = true);
        if !has_term {
            return Err(refuse(format!(
                "{unit} {}: the intent of {} ({}) has no word the ranker reads (only function \
                 words, filler such as \"help me\" or \"right now\", single letters or \
                 invisible characters): there is nothing to rank",
                p.at,
                quoted(&p.case.id),
                quoted(&p.case.intent)
            )));
        }
        if let Some((first_at, first_id)) =
            seen.insert(printed_alike(&p.case.id), (p.at, p.case.id.clone()))
        {
            let spelled = if first_id == p.case.id {
                String::new()
            } else {
                format!(
                    " (spelled two ways that print alike: {}, {})",
                    spelled_out(&first_id),
                    spelled_out(&p.case.id)
                )
            };
            return Err(refuse(format!(
                "{} {first_at} and {} share the id {}{spelled}: each question needs its own",
                source.units,
                p.at,
                quoted(&first_id)
            )));
        }
    }
    let (mut unknown, mut emptied, mut named_none) = (Vec::new(), 0usize, Vec::new());
    let mut first_unknown: Option<(usize, String)> = None;
    // The pool's names as they print, looked up once each (not a scan of the pool per
    // expected tool: tester's F3).
    let pool: HashSet<String> = guide.entry_names().map(|(n, _)| printed_alike(n)).collect();
    let mut cases = Vec::with_capacity(placed.len());
    for Placed { at, mut case } in placed {
        if case.expected.is_empty() {
            named_none.push(case.id);
            continue;
        }
        let (known, missing): (Vec<String>, Vec<String>) = case
            .expected
            .into_iter()
            .partition(|n| pool.contains(&printed_alike(n)));
        if let Some(m) = missing.first()
            && first_unknown.is_none()
        {
            first_unknown = Some((at, m.clone()));
        }
        unknown.extend(missing);
        if known.is_empty() {
            emptied += 1;
            continue;
        }
        case.expected = known;
        cases.push(case);
    }
    let mut notes = Vec::new();
    if !unknown.is_empty() {
        let names = distinct(unknown.iter().cloned());
        notes.push(format!(
            "{} {} name a tool {} lacks ({}); dropped from the expected tools{}",
            unknown.len(),
            source.expected,
            source.pool,
            named_few(&names),
            if emptied > 0 {
                format!(", {emptied} questions left with none skipped")
            } else {
                String::new()
            }
        ));
    }
    if !named_none.is_empty() {
        let shown: Vec<String> = named_none.iter().take(8).map(|id| quoted(id)).collect();
        notes.push(format!(
            "{} questions name no expected tool ({}{}); left out of every figure",
            named_none.len(),
            shown.join(", "),
            if named_none.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        ));
    }
    if cases.is_empty() {
        let first = match first_unknown {
            Some((at, tool)) => format!(" (the first, {unit} {at}, expects {})", quoted(&tool)),
            None => String::new(),
        };
        return Err(refuse(format!(
            "nothing to rank against: no question names an expected tool in {}{first}",
            source.pool
        )));
    }
    Ok((cases, notes))
}

/// The operator's labels in `path` ([`parse_labels`]) against the catalog `guide`, named
/// `pool` in what is said, under the one rule ([`settle`]). `catalog_warnings` are what
/// reading the catalog warned of ([`parse_catalog`]'s: entries listed word for word, names
/// that print alike), said first among the notes, as `compact` and `preview` say them
/// (tester's F7: `eval rank` passed them over).
pub fn load_labels(
    path: &Path,
    guide: RoutingGuide,
    catalog_warnings: &[String],
    pool: &str,
) -> anyhow::Result<RankSet> {
    let text = read_text(path)?;
    // Named on one line wherever an error or a note names it (tester F1).
    let origin = crate::core::terminal_text::path(path).into_owned();
    let labels = parse_labels(&text, &origin)?;
    let (cases, settled) = settle(
        labels.placed,
        &guide,
        &SetSource {
            origin: &origin,
            unit: "line",
            units: "lines",
            pool,
            expected: "expected tools",
        },
    )?;
    let mut notes = catalog_warnings.to_vec();
    notes.extend(shared_names(&guide));
    notes.extend(labels.notes);
    notes.extend(settled);
    Ok(RankSet {
        guide,
        cases,
        notes,
    })
}

/// The BFCL question and answer files `eval rank` reads (`simple` is `simple_python`).
pub const BFCL_CATEGORIES: &[&str] = &[
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
];

/// A category as BFCL's files name it.
pub fn bfcl_category(name: &str) -> Option<&'static str> {
    let name = if name == "simple" {
        "simple_python"
    } else {
        name
    };
    BFCL_CATEGORIES.iter().copied().find(|c| *c == name)
}

#[derive(Deserialize)]
struct BfclQuestion {
    id: String,
    question: Vec<Vec<Message>>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct BfclAnswer {
    id: String,
    ground_truth: Vec<HashMap<String, Value>>,
}

#[derive(Deserialize)]
struct OperatorLabel {
    #[serde(default)]
    id: Option<String>,
    #[serde(alias = "query", alias = "question")]
    intent: String,
    #[serde(alias = "tools")]
    expected: Vec<String>,
}

/// Parse JSON Lines of objects shaped `object` (`{"intent": …, "expected": […]}`, as a
/// message shows it; blank lines skipped), naming the line of the first bad one.
pub fn jsonl<T: for<'de> Deserialize<'de>>(
    text: &str,
    origin: &str,
    object: &str,
) -> Result<Vec<T>, CoreError> {
    Ok(jsonl_numbered(text, origin, object)?
        .into_iter()
        .map(|(_, item)| item)
        .collect())
}

/// As [`jsonl`], each item with its line in the file (1-based). A line that is JSON but no
/// object (an array, a string, …) is said to be so, naming the object wanted (tester's F10:
/// an array line was `found an object; expected a string`, and an array in the order of
/// the fields was read as one, serde taking a sequence for a struct).
fn jsonl_numbered<T: for<'de> Deserialize<'de>>(
    text: &str,
    origin: &str,
    object: &str,
) -> Result<Vec<(usize, T)>, CoreError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(first) = line.trim_start().chars().next() else {
            continue;
        };
        if first != '{'
            && let Some(kind) = json_kind(line)
        {
            return Err(CoreError::Content {
                origin: origin.into(),
                message: format!(
                    "line {}: {kind} where an object {object} was expected (one per line)",
                    n + 1
                ),
            });
        }
        let item = serde_json::from_str::<T>(line)
            .map_err(|e| CoreError::json_line(origin, n + 1, line, &e))?;
        out.push((n + 1, item));
    }
    Ok(out)
}

/// What a line holding one JSON value other than an object is (`a JSON array`); `None`
/// when it is not JSON (its syntax error is said instead).
fn json_kind(line: &str) -> Option<&'static str> {
    let value: Value = serde_json::from_str(line).ok()?;
    Some(match value {
        Value::Array(_) => "a JSON array",
        Value::String(_) => "a JSON string",
        Value::Number(_) => "a JSON number",
        Value::Bool(_) => "a JSON boolean",
        Value::Null => "JSON null",
        Value::Object(_) => return None,
    })
}

/// The objects a labels line, a BFCL question line and a BFCL answer line hold, as
/// messages show them.
const LABEL_OBJECT: &str = r#"{"intent": …, "expected": […]}"#;
const BFCL_QUESTION_OBJECT: &str = r#"{"id": …, "question": […]}"#;
const BFCL_ANSWER_OBJECT: &str = r#"{"id": …, "ground_truth": […]}"#;

/// `DIR/BFCL_v4_{category}.json` and `DIR/possible_answer/BFCL_v4_{category}.json`: every
/// distinct function pooled into one catalog; each question's user turns are the intent.
pub fn load_bfcl(dir: &Path, category: &str) -> anyhow::Result<RankSet> {
    let questions_path = dir.join(format!("BFCL_v4_{category}.json"));
    let answers_path = dir
        .join("possible_answer")
        .join(format!("BFCL_v4_{category}.json"));
    let questions_text = read_text(&questions_path)?;
    let answers_text = read_text(&answers_path)?;
    let q_origin = questions_path.shown().to_string();
    let a_origin = answers_path.shown().to_string();
    let guide = parse_catalog(&questions_text, &q_origin)?.guide;
    let questions: Vec<(usize, BfclQuestion)> =
        jsonl_numbered(&questions_text, &q_origin, BFCL_QUESTION_OBJECT)?;
    let answers: Vec<(usize, BfclAnswer)> =
        jsonl_numbered(&answers_text, &a_origin, BFCL_ANSWER_OBJECT)?;
    // Each question's answer, by id; an id answered twice is refused (one answer was
    // dropped without a word).
    let mut expected: HashMap<String, (usize, Vec<String>)> = HashMap::new();
    for (line, a) in answers {
        let tools = a
            .ground_truth
            .iter()
            .flat_map(|call| call.keys().cloned())
            .collect();
        if let Some((first, _)) = expected.insert(a.id.clone(), (line, tools)) {
            return Err(CoreError::Content {
                origin: a_origin,
                message: format!(
                    "lines {first} and {line} both answer {}: each question needs one answer",
                    crate::core::terminal_text::quoted(&a.id)
                ),
            }
            .into());
        }
    }
    let mut placed = Vec::with_capacity(questions.len());
    let mut unanswered = Vec::new();
    let mut asked: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (line, q) in questions {
        asked.insert(q.id.clone());
        let Some((_, tools)) = expected.get(&q.id).cloned() else {
            unanswered.push(q.id);
            continue;
        };
        let intent = q
            .question
            .iter()
            .flatten()
            .filter(|m| m.role == "user")
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        placed.push(Placed {
            at: line,
            case: LabelledIntent {
                key: q.id.clone(),
                id: q.id,
                intent,
                expected: distinct(tools),
            },
        });
    }
    if placed.is_empty() {
        return Err(CoreError::Content {
            origin: q_origin,
            message: "no question has a ground-truth answer".into(),
        }
        .into());
    }
    let mut notes = shared_names(&guide);
    let (cases, settled) = settle(
        placed,
        &guide,
        &SetSource {
            origin: &q_origin,
            unit: "line",
            units: "lines",
            pool: "the pool",
            expected: "expected calls",
        },
    )?;
    notes.extend(settled);
    // What the two files do not share, said rather than passed over.
    let ids = |ids: &mut Vec<String>| {
        ids.sort();
        let shown: Vec<String> = ids
            .iter()
            .take(8)
            .map(|id| crate::core::terminal_text::quoted(id))
            .collect();
        format!(
            "{}{}",
            shown.join(", "),
            if ids.len() > shown.len() { ", …" } else { "" }
        )
    };
    if !unanswered.is_empty() {
        notes.push(format!(
            "{} questions have no answer in {a_origin} ({}); left out of every figure",
            unanswered.len(),
            ids(&mut unanswered)
        ));
    }
    let mut orphans: Vec<String> = expected
        .into_keys()
        .filter(|id| !asked.contains(id))
        .collect();
    if !orphans.is_empty() {
        notes.push(format!(
            "{} answers name no question of {q_origin} ({}); ignored",
            orphans.len(),
            ids(&mut orphans)
        ));
    }
    Ok(RankSet {
        guide,
        cases,
        notes,
    })
}

/// A note naming the names several pooled entries share, if any: a ranking counts such a
/// name once, at its best place. Names are counted as they print
/// ([`printed_alike`](crate::core::text::printed_alike): `dup` and `dup ` are one name, as
/// `eval rank` ranks them; tester's F7).
pub fn shared_names(guide: &RoutingGuide) -> Vec<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    guide.entry_names().for_each(|(n, _)| {
        *count
            .entry(crate::core::text::printed_alike(n))
            .or_default() += 1
    });
    let mut shared: Vec<&str> = count
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, _)| n.as_str())
        .collect();
    if shared.is_empty() {
        return Vec::new();
    }
    shared.sort_unstable();
    let entries: usize = shared.iter().map(|n| count[*n]).sum();
    let shown: Vec<&str> = shared.iter().take(NAMES_SHOWN).copied().collect();
    vec![format!(
        "{} names are shared by {} pooled entries (different descriptions); each counts once, at its best place: {}{}",
        shared.len(),
        entries,
        shown.join(", "),
        if shared.len() > shown.len() {
            ", …"
        } else {
            ""
        }
    )]
}

#[derive(Deserialize)]
struct NestfulQuestion {
    input: String,
    output: Vec<NestfulCall>,
    #[serde(default)]
    sample_id: Option<Value>,
}

#[derive(Deserialize)]
struct NestfulCall {
    name: String,
}

#[derive(Deserialize)]
struct NestfulTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    query_parameters: Option<Value>,
    #[serde(default)]
    path_parameters: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    output_parameters: Option<Value>,
}

/// NESTFUL's final step, which gathers the results and is no tool.
const NESTFUL_RESULT: &str = "var_result";

/// A NESTFUL parameter map (`{"name": {"description", "type", "required", "allowed_values"}}`,
/// or a JSON Schema with `properties`) as a JSON Schema the ranker reads.
fn nestful_schema(maps: &[&Option<Value>]) -> Option<Schema> {
    let mut props = serde_json::Map::new();
    for map in maps.iter().filter_map(|m| m.as_ref()) {
        let map = map.get("properties").unwrap_or(map);
        let Some(obj) = map.as_object() else {
            continue;
        };
        for (name, p) in obj {
            let mut prop = serde_json::Map::new();
            if let Some(d) = p.get("description").and_then(Value::as_str) {
                prop.insert("description".into(), Value::String(d.to_string()));
            }
            if let Some(values) = p
                .get("allowed_values")
                .or_else(|| p.get("enum"))
                .and_then(Value::as_array)
                .filter(|v| !v.is_empty())
            {
                prop.insert("enum".into(), Value::Array(values.clone()));
            }
            props.insert(name.clone(), Value::Object(prop));
        }
    }
    (!props.is_empty()).then(|| {
        Schema::Full(serde_json::json!({"type": "object", "properties": Value::Object(props)}))
    })
}

/// The spec file beside a NESTFUL data file: `X-data.json` → `X-spec.json`.
pub fn nestful_spec_path(data: &Path) -> Option<std::path::PathBuf> {
    let name = data.file_name()?.to_str()?;
    let stem = name.strip_suffix("-data.json")?;
    Some(data.with_file_name(format!("{stem}-spec.json")))
}

/// NESTFUL: a JSON array of `{"input", "output": [{"name", "arguments", "label"}, …]}` (the
/// calls that answer the question, the last gathering results as `var_result`) and a tool
/// spec, a JSON array of `{"name", "description", "parameters" | "query_parameters" |
/// "arguments", "output_parameters"}`. The expected tools are the distinct names called;
/// the pool is the spec. An entry repeated word for word is kept once; a name the spec
/// lacks is dropped from the expected tools (a question left with none is skipped), and
/// the notes say how many.
pub fn load_nestful(data_path: &Path, spec_path: &Path) -> anyhow::Result<RankSet> {
    let data_origin = data_path.shown().to_string();
    let spec_origin = spec_path.shown().to_string();
    let data = read_text(data_path)?;
    let questions: Vec<NestfulQuestion> =
        serde_json::from_str(&data).map_err(|e| CoreError::json(&data_origin, &data, &e))?;
    let spec = read_text(spec_path)?;
    let tools: Vec<NestfulTool> =
        serde_json::from_str(&spec).map_err(|e| CoreError::json(&spec_origin, &spec, &e))?;
    let mut guide = RoutingGuide::default();
    let mut repeated = 0;
    for t in tools {
        let pack = Pack {
            name: t.name.clone(),
            description: t.description.clone(),
            metadata: PackMetadata {
                input_schema: nestful_schema(&[
                    &t.parameters,
                    &t.path_parameters,
                    &t.query_parameters,
                    &t.arguments,
                ]),
                output_schema: nestful_schema(&[&t.output_parameters]),
                ..PackMetadata::default()
            },
        };
        if guide.packs.contains(&pack) {
            repeated += 1;
            continue;
        }
        guide.packs.push(pack);
    }
    if guide.packs.is_empty() {
        return Err(CoreError::Content {
            origin: spec_origin,
            message: "has no tools (expected a JSON array of {\"name\", \"description\", …})"
                .into(),
        }
        .into());
    }
    let mut notes = Vec::new();
    if repeated > 0 {
        notes.push(format!(
            "{repeated} spec entries repeat another word for word and were kept once"
        ));
    }
    notes.extend(shared_names(&guide));
    let mut placed = Vec::with_capacity(questions.len());
    for (i, q) in questions.into_iter().enumerate() {
        let called = distinct(
            q.output
                .into_iter()
                .map(|c| c.name)
                .filter(|n| n != NESTFUL_RESULT),
        );
        let id = match &q.sample_id {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => format!(
                "{}#{}",
                data_path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                i + 1
            ),
        };
        placed.push(Placed {
            at: i + 1,
            case: LabelledIntent {
                key: q.input.clone(),
                id,
                intent: q.input,
                expected: called,
            },
        });
    }
    let (cases, settled) = settle(
        placed,
        &guide,
        &SetSource {
            origin: &data_origin,
            unit: "entry",
            units: "entries",
            pool: "the spec",
            expected: "expected calls",
        },
    )?;
    notes.extend(settled);
    Ok(RankSet {
        guide,
        cases,
        notes,
    })
}

/// The operator's own labels, one `{"intent": …, "expected": […]}` per line, each with its
/// line. An explicit id follows the one name rule (no spaces around it, no control, bidi or
/// invisible character); a line without one is named `line N` (its place among the
/// labels), which an explicit id may not take: [`settle`] refuses two questions with one
/// id, and leaves out a line that expects no tool. An expected tool follows the name rule
/// too (`"web.search "` could never be found, while the catalog's names print trimmed);
/// one listed twice counts once, and the notes say which lines did (T11-6).
pub fn parse_labels(text: &str, origin: &str) -> Result<OperatorLabels, CoreError> {
    use crate::core::budget::name_problem;
    use crate::core::terminal_text::quoted;
    let numbered: Vec<(usize, OperatorLabel)> = jsonl_numbered(text, origin, LABEL_OBJECT)?;
    let mut labels: Vec<Placed> = Vec::with_capacity(numbered.len());
    let mut repeated: Vec<(usize, String)> = Vec::new();
    for (k, (line, label)) in numbered.into_iter().enumerate() {
        let refuse = |what: String, problem: &str| CoreError::Content {
            origin: origin.into(),
            message: format!("line {line}: {what} {problem}"),
        };
        if let Some(id) = label.id.as_deref()
            && let Some(problem) = name_problem(id)
        {
            return Err(refuse(format!("the id {}", quoted(id)), problem));
        }
        if let Some((tool, problem)) = label
            .expected
            .iter()
            .find_map(|t| name_problem(t).map(|p| (t, p)))
        {
            return Err(refuse(
                format!("the expected tool {}", quoted(tool)),
                problem,
            ));
        }
        // A set, not a scan of the names before each (tester's F3: quadratic).
        let mut listed: HashSet<&str> = HashSet::with_capacity(label.expected.len());
        if let Some(twice) = label.expected.iter().find(|t| !listed.insert(t.as_str())) {
            repeated.push((line, twice.clone()));
        }
        let id = label
            .id
            .clone()
            .unwrap_or_else(|| format!("line {}", k + 1));
        // Only the opening the rankers read is kept: a 250 MB line is not held whole for
        // the rest of the run.
        let intent = crate::core::text::opening(&label.intent, crate::core::rank::QUERY_MAX_BYTES)
            .to_string();
        labels.push(Placed {
            at: line,
            case: LabelledIntent {
                key: label.id.unwrap_or_else(|| intent.clone()),
                id,
                intent,
                expected: distinct(label.expected),
            },
        });
    }
    if labels.is_empty() {
        return Err(CoreError::Content {
            origin: origin.into(),
            message:
                "has no labelled intents (expected one {\"intent\": …, \"expected\": […]} per line)"
                    .into(),
        });
    }
    if labels.iter().all(|l| l.case.expected.is_empty()) {
        return Err(CoreError::Content {
            origin: origin.into(),
            message: "no line names an expected tool (every \"expected\" is empty): nothing to rank against"
                .into(),
        });
    }
    let mut notes = Vec::new();
    if let Some((line, tool)) = repeated.first() {
        notes.push(format!(
            "{} lines list an expected tool twice (the first, line {line}: {}); each counted once",
            repeated.len(),
            quoted(tool)
        ));
    }
    Ok(OperatorLabels {
        placed: labels,
        notes,
    })
}

/// The operator's labels as [`parse_labels`] read them, with what it had to settle.
#[derive(Debug)]
pub struct OperatorLabels {
    pub placed: Vec<Placed>,
    /// Said in the report beside [`settle`]'s notes: an expected tool listed twice.
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tester 11 T11-6: NESTFUL keeps the one rule too (`settle`): a call the spec lacks is
    /// dropped with the note it always had, a question calling nothing is left out with a
    /// note, a repeated `sample_id` and an empty question are refused naming the entries.
    #[test]
    fn nestful_keeps_the_one_rule() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("x-data.json");
        let spec = dir.path().join("x-spec.json");
        std::fs::write(
            &spec,
            r#"[{"name": "alpha", "description": "convert alpha widgets"}, {"name": "bravo", "description": "delete bravo records"}]"#,
        )
        .unwrap();
        let load = |text: &str| {
            std::fs::write(&data, text).unwrap();
            load_nestful(&data, &spec).map_err(|e| e.to_string())
        };
        let set = load(
            r#"[{"input": "convert alpha", "output": [{"name": "alpha"}, {"name": "gone"}, {"name": "var_result"}]},
                {"input": "nothing to call", "output": [{"name": "var_result"}]},
                {"input": "delete bravo", "output": [{"name": "bravo"}]}]"#,
        )
        .unwrap();
        assert_eq!(set.cases.len(), 2);
        assert_eq!(set.cases[0].expected, vec!["alpha"]);
        assert!(
            set.notes.contains(
                &"1 expected calls name a tool the spec lacks (gone); dropped from the expected tools"
                    .to_string()
            ),
            "{:?}",
            set.notes
        );
        assert!(
            set.notes
                .iter()
                .any(|n| n.starts_with("1 questions name no expected tool ('x-data.json#2')")),
            "{:?}",
            set.notes
        );
        let err = load(
            r#"[{"input": "convert alpha", "output": [{"name": "alpha"}], "sample_id": 7},
                {"input": "delete bravo", "output": [{"name": "bravo"}], "sample_id": 7}]"#,
        )
        .unwrap_err();
        assert!(err.contains("entries 1 and 2 share the id '7'"), "{err}");
        let err = load(r#"[{"input": " ", "output": [{"name": "alpha"}]}]"#).unwrap_err();
        assert!(err.contains("entry 1: the intent of"), "{err}");
    }

    #[test]
    fn operator_labels_parse_and_a_bad_line_is_named() {
        let ok = parse_labels(
            "{\"intent\":\"take a screenshot\",\"expected\":[\"browser.screenshot\"]}\n\n",
            "labels.jsonl",
        )
        .unwrap();
        assert_eq!(ok.placed[0].case.expected, vec!["browser.screenshot"]);
        assert!(ok.notes.is_empty(), "{:?}", ok.notes);
        let err = parse_labels(
            "{\"intent\":\"a\",\"expected\":[]}\n{\"intent\":3}\n",
            "labels.jsonl",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("labels.jsonl: line 2"), "{msg}");
        assert!(parse_labels("\n", "x").is_err());
        let none = parse_labels("{\"intent\":\"a\",\"expected\":[]}\n", "x").unwrap_err();
        assert!(
            none.to_string().contains("no line names an expected tool"),
            "{none}"
        );
        let some = parse_labels(
            "{\"intent\":\"a\",\"expected\":[]}\n{\"intent\":\"b\",\"expected\":[\"t\"]}\n",
            "x",
        )
        .unwrap();
        assert_eq!(
            some.placed.len(),
            2,
            "a line expecting no tool among others is read (settle leaves it out, with a note)"
        );
    }

    /// Tester's F3: the note on expected tools the pool lacks named every one of them (150 KB
    /// on one line for 20,000); it names the first few and counts the rest.
    #[test]
    fn the_note_on_missing_expected_tools_is_bounded() {
        let guide = parse_catalog(
            r#"[{"name": "web_search", "description": "Search the web."}]"#,
            "c",
        )
        .unwrap()
        .guide;
        let mut expected = vec!["web_search".to_string()];
        expected.extend((0..5_000).map(|i| format!("x{i}")));
        // One name missing twice, in two questions: counted twice, named once.
        let placed = vec![
            Placed {
                at: 1,
                case: LabelledIntent {
                    id: "a".into(),
                    intent: "search the web".into(),
                    expected,
                    key: "a".into(),
                },
            },
            Placed {
                at: 2,
                case: LabelledIntent {
                    id: "b".into(),
                    intent: "search the web again".into(),
                    expected: vec!["x0".into()],
                    key: "b".into(),
                },
            },
        ];
        let source = SetSource {
            origin: "l.jsonl",
            unit: "line",
            units: "lines",
            pool: "the catalog c",
            expected: "expected tools",
        };
        let (cases, notes) = settle(placed, &guide, &source).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(
            notes,
            vec![
                "5001 expected tools name a tool the catalog c lacks (x0, x1, x2, x3, x4, x5, x6, x7 and 4992 more); dropped from the expected tools, 1 questions left with none skipped"
                    .to_string()
            ]
        );
    }

    /// Tester's F10: a line holding a JSON array was told `found an object; expected a
    /// string`, and an array in the order of a label's fields was read as one.
    #[test]
    fn a_labels_line_that_is_no_object_is_said_to_be_so() {
        for (line, kind) in [
            ("[{\"intent\":\"a\",\"expected\":[\"t\"]}]", "a JSON array"),
            ("[\"id\",\"take a screenshot\",[\"t\"]]", "a JSON array"),
            ("\"take a screenshot\"", "a JSON string"),
            ("7", "a JSON number"),
        ] {
            let err = parse_labels(
                &format!("{{\"intent\":\"a\",\"expected\":[\"t\"]}}\n{line}\n"),
                "labels.jsonl",
            )
            .unwrap_err()
            .to_string();
            assert_eq!(
                err,
                format!(
                    "labels.jsonl: line 2: {kind} where an object {{\"intent\": …, \"expected\": […]}} was expected (one per line)"
                ),
                "{line}"
            );
        }
        // Broken JSON keeps its syntax error.
        let err = parse_labels("[1,\n", "labels.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("labels.jsonl: line 1, column"), "{err}");
    }

    /// T11-6 residue: an expected tool with spaces around it was "not in the catalog" (the
    /// catalog's names print trimmed, so the operator saw the very name listed), and one
    /// listed twice was taken without a word.
    #[test]
    fn an_expected_tool_keeps_the_name_rule_and_a_repeat_is_noted() {
        let err = parse_labels(
            "{\"intent\":\"find it\",\"expected\":[\"web.search\"]}\n\
             {\"intent\":\"find it again\",\"expected\":[\"web.search \"]}\n",
            "labels.jsonl",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "labels.jsonl: line 2: the expected tool 'web.search ' has spaces around it"
        );
        let read = parse_labels(
            "{\"intent\":\"find it\",\"expected\":[\"web.search\",\"web.search\"]}\n\
             {\"intent\":\"fetch it\",\"expected\":[\"web.fetch\"]}\n\
             {\"intent\":\"fetch more\",\"expected\":[\"web.fetch\",\"a\",\"web.fetch\"]}\n",
            "labels.jsonl",
        )
        .unwrap();
        assert_eq!(read.placed[0].case.expected, vec!["web.search"]);
        assert_eq!(read.placed[2].case.expected, vec!["web.fetch", "a"]);
        assert_eq!(
            read.notes,
            vec![
                "2 lines list an expected tool twice (the first, line 1: 'web.search'); each counted once"
                    .to_string()
            ]
        );
    }
}

/// The ranker's fast path against its naive reference (`RankIndex::rank_reference`) on real
/// pools: the full order, every score bit for bit, and each request winner's placement.
#[cfg(test)]
mod rank_order {
    use super::*;
    use crate::core::rank::{HistoryPrior, PastPlan, RankIndex, Ranking};

    fn bfcl_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bfcl")
    }

    fn same(index: &RankIndex, intent: &str, prior: Option<&HistoryPrior>) {
        let fast: Ranking = index.rank(intent, prior);
        let slow = index.rank_reference(intent, prior);
        assert_eq!(fast.order.len(), slow.len(), "{intent}");
        for (k, (a, b)) in fast.order.iter().zip(&slow).enumerate() {
            assert!(
                a.index == b.index
                    && a.score.to_bits() == b.score.to_bits()
                    && a.lexical.to_bits() == b.lexical.to_bits()
                    && a.prior.to_bits() == b.prior.to_bits()
                    && a.best_for_request == b.best_for_request
                    && a.lookup_for == b.lookup_for
                    && a.family.to_bits() == b.family.to_bits()
                    && a.family_from == b.family_from,
                "{intent}: place {k}: {a:?} vs {b:?}"
            );
        }
        // The top k without sorting the rest: the same places, the same confidence.
        for k in [1, 3, 10] {
            let top = index.rank_top(intent, prior, k);
            let want = &fast.order[..k.min(fast.order.len())];
            assert_eq!(top.order, want, "{intent}: top {k}");
            assert_eq!(top.confidence, fast.confidence, "{intent}: top {k}");
            assert_eq!(top.terms, fast.terms);
        }
    }

    #[test]
    fn the_full_order_is_the_reference_order_on_bfcl_pools() {
        for category in [
            "multiple",
            "live_multiple",
            "parallel_multiple",
            "simple_python",
        ] {
            let set = load_bfcl(&bfcl_dir(), category).unwrap();
            let index = RankIndex::new(&set.guide);
            let cases = &set.cases[..set.cases.len().min(120)];
            for c in cases {
                same(&index, &c.intent, None);
            }
            // Questions of three requests, as the suite composes them.
            for w in cases.windows(3).step_by(3).take(30) {
                let joined = format!("{}. Then {}, and {}", w[0].intent, w[1].intent, w[2].intent);
                same(&index, &joined, None);
            }
            // A prior that lifts some tools and sinks others.
            let past: Vec<PastPlan> = cases
                .iter()
                .take(40)
                .enumerate()
                .map(|(k, c)| PastPlan {
                    intent: c.intent.clone(),
                    tools: c.expected.clone(),
                    outcome: if k % 3 == 0 { -1.0 } else { 1.0 },
                })
                .collect();
            let prior = HistoryPrior::new(&past);
            for c in cases.iter().take(60) {
                same(&index, &c.intent, Some(&prior));
            }
        }
    }

    /// NESTFUL's tools say what they output, so lookup steps are placed: the order, the
    /// marks and the top k stay those of the reference, and some are placed.
    #[test]
    fn the_full_order_is_the_reference_order_with_lookup_steps() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nestful");
        let mut placed = 0;
        for name in ["executable", "non-executable-glaive"] {
            let set = load_nestful(
                &dir.join(format!("{name}-data.json")),
                &dir.join(format!("{name}-spec.json")),
            )
            .unwrap();
            let index = RankIndex::new(&set.guide);
            for c in &set.cases {
                same(&index, &c.intent, None);
                placed += index
                    .rank(&c.intent, None)
                    .order
                    .iter()
                    .filter(|s| s.lookup_for.is_some())
                    .count();
            }
        }
        assert!(placed >= 10, "only {placed} lookup steps placed");
    }

    #[test]
    fn the_full_order_is_the_reference_order_on_the_sample_catalog() {
        let guide = parse_catalog(crate::sample::SAMPLE_CATALOG, "sample")
            .unwrap()
            .guide;
        let index = RankIndex::new(&guide);
        let messages: Vec<String> = crate::sample::SAMPLE_PLANNER_EVAL
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["message"].as_str().map(str::to_string))
            .collect();
        assert!(messages.len() >= 100);
        let past: Vec<PastPlan> = messages
            .iter()
            .take(30)
            .enumerate()
            .map(|(k, m)| PastPlan {
                intent: m.clone(),
                tools: vec![index.name(k % index.len()).to_string()],
                outcome: if k % 4 == 0 { -0.5 } else { 1.0 },
            })
            .collect();
        let prior = HistoryPrior::new(&past);
        for m in &messages {
            same(&index, m, None);
            same(&index, m, Some(&prior));
        }
        for q in [
            "",
            "   ",
            "zzzz qqqq",
            "remember this launch note, draft a blog from it and make an illustration",
        ] {
            same(&index, q, None);
        }
    }
}
