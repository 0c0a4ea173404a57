//! The routing-guide catalog model (DESIGN §2.3) and the six trim steps that act on one entry.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A catalog as the planner receives it: packs (single tools) and pipelines (multi-step recipes).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoutingGuide {
    #[serde(default)]
    pub packs: Vec<Pack>,
    #[serde(default)]
    pub pipelines: Vec<Pipeline>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pack {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub metadata: PackMetadata,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PackMetadata {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub produces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intent_keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub typical_use: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limitations: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Schema>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Schema>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub metadata: PipelineMetadata,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PipelineMetadata {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub produces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intent_keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub typical_use: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limitations: Vec<String>,
    /// Never trimmed: the planner's pipeline-wins rule hangs on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<PipelineStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Schema>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Schema>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineStep {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub pack: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// A schema in full, or reduced to its sorted field names by trim step 5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Schema {
    Fields(Vec<String>),
    Full(Value),
}

impl Schema {
    /// The parameter names of an object schema (JSON Schema or BFCL's `dict`, or a flat
    /// `{field: type}` map), sorted; `None` when they cannot be read truthfully, and the
    /// schema is then kept whole rather than reduced to a list that invents or drops one.
    ///
    /// Read: `properties` (but one whose schema is `false`), the names `required`,
    /// `dependentRequired` and draft-07 `dependencies` list; a local `$ref` (`#/$defs/X`,
    /// `#/definitions/X`, any `#/…` pointer into the schema itself, followed at most
    /// [`MAX_SCHEMA_DEPTH`] deep, a cycle refused, each target read once); the union of the
    /// branches of `allOf`, `anyOf`, `oneOf` and of `if`/`then`/`else`, `dependentSchemas`
    /// and draft-07 `dependencies`. Unreadable: a free map (`additionalProperties` open and
    /// nothing declared), a remote `$ref`, `patternProperties`, a
    /// schema that is not an object's (`"type": "string"`, `enum`, `const`), an object
    /// with no `type`, `properties`, `$ref` or combinator that is not a flat map (its keys
    /// all keywords, or keywords mixed with others), anything malformed.
    /// No JSON Schema keyword ([`is_schema_keyword`]) is ever taken for a field name.
    pub fn field_names(&self) -> Option<Vec<String>> {
        match self {
            Schema::Fields(f) => Some(f.clone()),
            Schema::Full(v) => {
                let mut reader = FieldReader {
                    root: v,
                    names: std::collections::BTreeSet::new(),
                    refs: Vec::new(),
                    read_refs: std::collections::HashSet::new(),
                    visits: 0,
                };
                reader.read(v, 0).ok()?;
                Some(reader.names.into_iter().collect())
            }
        }
    }
}

impl Schema {
    /// The parameter names to match words against: [`Schema::field_names`], or, when those
    /// cannot be read truthfully (the schema is sent whole), the keys of its `properties`,
    /// which it still declares. The ranker reads names through this, so an identifier input
    /// behind a `$ref` or an `allOf` is matched and linked as the trimmer sends it.
    pub fn declared_names(&self) -> Vec<String> {
        self.field_names().unwrap_or_else(|| match self {
            Schema::Fields(f) => f.clone(),
            Schema::Full(v) => v
                .get("properties")
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
        })
    }
}

/// How deep `$ref`s and combinators are followed when reading field names.
pub const MAX_SCHEMA_DEPTH: usize = 16;

/// How many schemas reading one schema's field names may visit: `allOf`s of `$ref`s to
/// `allOf`s would otherwise multiply at each level.
const MAX_SCHEMA_VISITS: usize = 1024;

/// Why field names could not be read; the schema is then kept whole.
struct Unreadable;

struct FieldReader<'a> {
    /// The whole schema, for local `$ref`s.
    root: &'a Value,
    names: std::collections::BTreeSet<String>,
    /// The `$ref`s being resolved, to refuse a cycle.
    refs: Vec<&'a str>,
    /// The `$ref`s read whole already: a target gives the same names each time, so it is
    /// read once (tester 7 T7-2: `allOf` of 1,000 copies of one `$ref` to 50,000 properties
    /// took 13.6 s).
    read_refs: std::collections::HashSet<&'a str>,
    visits: usize,
}

impl<'a> FieldReader<'a> {
    /// Add the field names `schema` declares.
    fn read(&mut self, schema: &'a Value, depth: usize) -> Result<(), Unreadable> {
        self.visits += 1;
        if depth > MAX_SCHEMA_DEPTH || self.visits > MAX_SCHEMA_VISITS {
            return Err(Unreadable);
        }
        let obj = schema.as_object().ok_or(Unreadable)?;
        let keywords = obj.keys().filter(|k| is_schema_keyword(k)).count();
        if keywords == 0 {
            // A flat `{field: type}` map, as some catalogs write inputs (an empty one: none).
            self.names.extend(obj.keys().cloned());
            return Ok(());
        }
        let structural = [
            "properties",
            "$ref",
            "allOf",
            "anyOf",
            "oneOf",
            "if",
            "then",
            "else",
        ]
        .iter()
        .any(|k| obj.contains_key(*k));
        if !structural && (keywords < obj.len() || !obj.contains_key("type")) {
            // `{"type": "object", "url": "string"}`, or `{"title": "string", "description":
            // "string"}` (a flat map of two fields, or a schema of none?): not guessed.
            return Err(Unreadable);
        }
        if ["patternProperties", "enum", "const"]
            .iter()
            .any(|k| obj.contains_key(*k))
        {
            return Err(Unreadable);
        }
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if is_object_type(t) => {}
            Some(Value::Array(ts)) if ts.iter().any(|t| t.as_str().is_some_and(is_object_type)) => {
            }
            Some(_) => return Err(Unreadable),
        }
        match obj.get("properties") {
            None => {}
            // A property whose schema is `false` may not be given: no field (tester 7 T7-1).
            Some(Value::Object(props)) => self.names.extend(
                props
                    .iter()
                    .filter(|(_, p)| **p != Value::Bool(false))
                    .map(|(k, _)| k.clone()),
            ),
            Some(_) => return Err(Unreadable),
        }
        // A name only `required` lists is a field all the same (any key is allowed unless
        // `additionalProperties` is false); so is one `dependentRequired` lists.
        match obj.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                for n in names {
                    self.names.insert(n.as_str().ok_or(Unreadable)?.to_string());
                }
            }
            Some(_) => return Err(Unreadable),
        }
        // Keys the schema leaves open (`additionalProperties` a schema, or true) with none
        // declared: a free map, whose names cannot be listed; sent whole.
        if obj
            .get("additionalProperties")
            .is_some_and(|a| *a != Value::Bool(false))
            && !obj.contains_key("properties")
            && !obj.contains_key("required")
            && !["$ref", "allOf", "anyOf", "oneOf"]
                .iter()
                .any(|k| obj.contains_key(*k))
        {
            return Err(Unreadable);
        }
        if let Some(r) = obj.get("$ref") {
            let r = r.as_str().ok_or(Unreadable)?;
            if self.refs.contains(&r) {
                return Err(Unreadable);
            }
            if !self.read_refs.contains(r) {
                let target = resolve_local_ref(self.root, r).ok_or(Unreadable)?;
                self.refs.push(r);
                self.read(target, depth + 1)?;
                self.refs.pop();
                self.read_refs.insert(r);
            }
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            if let Some(branches) = obj.get(k) {
                for b in branches.as_array().ok_or(Unreadable)? {
                    self.read(b, depth + 1)?;
                }
            }
        }
        for k in ["then", "else"] {
            if let Some(b) = obj.get(k) {
                self.read(b, depth + 1)?;
            }
        }
        if let Some(deps) = obj.get("dependentSchemas") {
            for b in deps.as_object().ok_or(Unreadable)?.values() {
                self.read(b, depth + 1)?;
            }
        }
        // draft-07 `dependencies`: a schema (as `dependentSchemas`) or a list of names (as
        // `dependentRequired`); 2020-12's `dependentRequired` is a list of names.
        for k in ["dependencies", "dependentRequired"] {
            if let Some(deps) = obj.get(k) {
                for d in deps.as_object().ok_or(Unreadable)?.values() {
                    match d {
                        Value::Array(names) => {
                            for n in names {
                                self.names.insert(n.as_str().ok_or(Unreadable)?.to_string());
                            }
                        }
                        Value::Object(_) if k == "dependencies" => self.read(d, depth + 1)?,
                        _ => return Err(Unreadable),
                    }
                }
            }
        }
        Ok(())
    }
}

fn is_object_type(t: &str) -> bool {
    matches!(t, "object" | "dict")
}

/// A `$ref` into the schema itself: `#` or a JSON Pointer `#/…` (`~1` is `/`, `~0` is `~`).
/// Anything else (another document, a URL, an anchor name) is not followed.
fn resolve_local_ref<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let pointer = r.strip_prefix('#')?;
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return None;
    }
    let mut at = root;
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(o) => o.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Every keyword of the JSON Schema 2020-12 vocabularies (core, applicator, unevaluated,
/// validation, meta-data, format, content) and of draft-07 (`definitions`, `dependencies`,
/// `additionalItems`), any `$…` keyword, and BFCL's `dict`-schema spellings: never a field.
pub fn is_schema_keyword(k: &str) -> bool {
    k.starts_with('$')
        || matches!(
            k,
            // Applicator (2020-12).
            "prefixItems"
                | "items"
                | "contains"
                | "additionalProperties"
                | "properties"
                | "patternProperties"
                | "dependentSchemas"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "allOf"
                | "anyOf"
                | "oneOf"
                | "not"
                // Unevaluated.
                | "unevaluatedItems"
                | "unevaluatedProperties"
                // Validation.
                | "type"
                | "const"
                | "enum"
                | "multipleOf"
                | "maximum"
                | "exclusiveMaximum"
                | "minimum"
                | "exclusiveMinimum"
                | "maxLength"
                | "minLength"
                | "pattern"
                | "maxItems"
                | "minItems"
                | "uniqueItems"
                | "maxContains"
                | "minContains"
                | "maxProperties"
                | "minProperties"
                | "required"
                | "dependentRequired"
                // Meta-data.
                | "title"
                | "description"
                | "default"
                | "deprecated"
                | "readOnly"
                | "writeOnly"
                | "examples"
                // Format annotation; content.
                | "format"
                | "contentEncoding"
                | "contentMediaType"
                | "contentSchema"
                // Draft-07 and earlier.
                | "definitions"
                | "dependencies"
                | "additionalItems"
        )
}

/// The six trim steps, in the order they are applied (DESIGN §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrimStep {
    IntentKeywords = 1,
    TypicalUse = 2,
    Limitations = 3,
    StepBodies = 4,
    Schemas = 5,
    Descriptions = 6,
}

impl TrimStep {
    pub const ALL: [TrimStep; 6] = [
        TrimStep::IntentKeywords,
        TrimStep::TypicalUse,
        TrimStep::Limitations,
        TrimStep::StepBodies,
        TrimStep::Schemas,
        TrimStep::Descriptions,
    ];

    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn label(self) -> &'static str {
        match self {
            TrimStep::IntentKeywords => "intent_keywords",
            TrimStep::TypicalUse => "typical_use",
            TrimStep::Limitations => "limitations",
            TrimStep::StepBodies => "step_bodies",
            TrimStep::Schemas => "schemas",
            TrimStep::Descriptions => "descriptions",
        }
    }

    pub fn explain(self) -> &'static str {
        match self {
            TrimStep::IntentKeywords => "dropped intent_keywords",
            TrimStep::TypicalUse => "dropped typical_use",
            TrimStep::Limitations => "dropped limitations",
            TrimStep::StepBodies => "pipeline steps reduced to id, name, pack",
            TrimStep::Schemas => "schemas reduced to sorted field names",
            TrimStep::Descriptions => "descriptions cut to their first sentence",
        }
    }
}

impl fmt::Display for TrimStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.number(), self.label())
    }
}

/// Which list an entry lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Pack,
    Pipeline,
}

impl Pack {
    pub fn apply(&mut self, step: TrimStep) {
        let m = &mut self.metadata;
        match step {
            TrimStep::IntentKeywords => m.intent_keywords.clear(),
            TrimStep::TypicalUse => m.typical_use.clear(),
            TrimStep::Limitations => m.limitations.clear(),
            TrimStep::StepBodies => {}
            TrimStep::Schemas => {
                reduce_schema(&mut m.input_schema);
                reduce_schema(&mut m.output_schema);
            }
            TrimStep::Descriptions => cut_to_first_sentence(&mut self.description),
        }
    }
}

impl Pipeline {
    pub fn apply(&mut self, step: TrimStep) {
        let m = &mut self.metadata;
        match step {
            TrimStep::IntentKeywords => m.intent_keywords.clear(),
            TrimStep::TypicalUse => m.typical_use.clear(),
            TrimStep::Limitations => m.limitations.clear(),
            TrimStep::StepBodies => m.steps.iter_mut().for_each(|s| s.body = None),
            TrimStep::Schemas => {
                reduce_schema(&mut m.inputs);
                reduce_schema(&mut m.outputs);
            }
            TrimStep::Descriptions => cut_to_first_sentence(&mut self.description),
        }
    }
}

/// Step 5 on one schema: its field names, or the schema whole when they cannot be read
/// truthfully ([`Schema::field_names`]).
fn reduce_schema(schema: &mut Option<Schema>) {
    if let Some(s @ Schema::Full(_)) = schema
        && let Some(names) = s.field_names()
    {
        *s = Schema::Fields(names);
    }
}

fn cut_to_first_sentence(text: &mut String) {
    let first = first_sentence(text);
    if first.len() != text.len() {
        *text = first.to_string();
    }
}

/// The first sentence: up to a `.`, `!` or `?` followed by white space or the end, or
/// the first line break. Common abbreviations do not end a sentence.
pub fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            return text[..i].trim_end();
        }
        if matches!(c, '.' | '!' | '?') {
            let at_break = bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace());
            if !at_break {
                continue;
            }
            let word = text[..i].rsplit(char::is_whitespace).next().unwrap_or("");
            let lower = word.to_ascii_lowercase();
            if c == '.'
                && matches!(
                    lower.as_str(),
                    "e.g" | "i.e" | "etc" | "vs" | "approx" | "incl" | "cf" | "mr" | "dr" | "st"
                )
            {
                continue;
            }
            return &text[..=i];
        }
    }
    text
}

impl RoutingGuide {
    pub fn entry_count(&self) -> usize {
        self.packs.len() + self.pipelines.len()
    }

    /// Names of every entry (packs by name, pipelines by id), packs first.
    pub fn entry_names(&self) -> impl Iterator<Item = (&str, EntryKind)> {
        self.packs
            .iter()
            .map(|p| (p.name.as_str(), EntryKind::Pack))
            .chain(
                self.pipelines
                    .iter()
                    .map(|p| (p.id.as_str(), EntryKind::Pipeline)),
            )
    }

    /// Whether a name resolves to a registered pack or pipeline.
    pub fn contains(&self, name: &str) -> bool {
        self.entry_names().any(|(n, _)| n == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pack() -> Pack {
        serde_json::from_value(json!({
            "name": "blog.draft",
            "description": "Draft a blog post from a brief. Uses the house style guide.",
            "metadata": {
                "accepts": ["brief"], "produces": ["markdown"],
                "intent_keywords": ["blog", "post"], "typical_use": "Turn notes into a post.",
                "limitations": ["English only"],
                "input_schema": {"type": "object", "properties": {"title": {"type": "string"}, "brief": {"type": "string"}}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn each_step_touches_only_its_field() {
        let mut p = pack();
        p.apply(TrimStep::IntentKeywords);
        assert!(p.metadata.intent_keywords.is_empty());
        assert!(!p.metadata.typical_use.is_empty());
        p.apply(TrimStep::TypicalUse);
        assert!(p.metadata.typical_use.is_empty());
        assert_eq!(p.metadata.limitations.len(), 1);
        p.apply(TrimStep::Limitations);
        assert!(p.metadata.limitations.is_empty());
        p.apply(TrimStep::Schemas);
        assert_eq!(
            p.metadata.input_schema,
            Some(Schema::Fields(vec!["brief".into(), "title".into()]))
        );
        p.apply(TrimStep::Descriptions);
        assert_eq!(p.description, "Draft a blog post from a brief.");
        assert_eq!(p.metadata.accepts, vec!["brief"]);
        assert_eq!(p.name, "blog.draft");
    }

    #[test]
    fn step_bodies_keep_id_name_pack_and_supersedes_survive_everything() {
        let mut pl: Pipeline = serde_json::from_value(json!({
            "id": "builtin.brief-to-blog", "name": "Brief to blog", "description": "One. Two.",
            "metadata": {"supersedes": ["blog.draft"], "intent_keywords": ["blog"],
                "steps": [{"id": "s1", "name": "Draft", "pack": "blog.draft", "body": {"x": 1}}]}
        }))
        .unwrap();
        for step in TrimStep::ALL {
            pl.apply(step);
        }
        assert_eq!(pl.metadata.supersedes, vec!["blog.draft"]);
        assert_eq!(pl.metadata.steps[0].body, None);
        assert_eq!(pl.metadata.steps[0].pack, "blog.draft");
        assert_eq!(pl.description, "One.");
        assert!(pl.metadata.intent_keywords.is_empty());
    }

    #[test]
    fn first_sentence_rules() {
        assert_eq!(
            first_sentence("Fetch a page. Then parse it."),
            "Fetch a page."
        );
        assert_eq!(first_sentence("Uses e.g. curl. More."), "Uses e.g. curl.");
        assert_eq!(
            first_sentence("Version 1.5 is out. Yes."),
            "Version 1.5 is out."
        );
        assert_eq!(first_sentence("Line one\nLine two"), "Line one");
        assert_eq!(first_sentence("No stop"), "No stop");
        assert_eq!(first_sentence("Really? Yes."), "Really?");
    }

    #[test]
    fn field_names_sorted_for_bfcl_dicts_and_flat_maps() {
        let s = Schema::Full(json!({"type": "dict", "properties": {"b": {}, "a": {}}}));
        assert_eq!(s.field_names(), Some(vec!["a".into(), "b".into()]));
        let flat = Schema::Full(json!({"url": "string", "depth": "int"}));
        assert_eq!(flat.field_names(), Some(vec!["depth".into(), "url".into()]));
        let none = Schema::Full(json!({"type": "object"}));
        assert_eq!(none.field_names(), Some(vec![]));
    }

    fn names(v: Value) -> Option<Vec<String>> {
        Schema::Full(v).field_names()
    }

    fn some(n: &[&str]) -> Option<Vec<String>> {
        Some(n.iter().map(|s| s.to_string()).collect())
    }

    /// Tester 6 F1: a top-level `$ref` gave `[]` (its parameters dropped) and `anyOf`/
    /// `allOf` became parameters named `anyOf`/`allOf`.
    #[test]
    fn field_names_resolve_a_local_ref_and_union_combinator_branches() {
        let pydantic = json!({"$ref": "#/$defs/Args", "$defs": {"Args": {"type": "object",
            "properties": {"title": {"type": "string"}, "priority": {"type": "integer"}},
            "required": ["title", "priority"]}}});
        assert_eq!(names(pydantic), some(&["priority", "title"]));
        let draft7 =
            json!({"$ref": "#/definitions/A", "definitions": {"A": {"properties": {"x": {}}}}});
        assert_eq!(names(draft7), some(&["x"]));
        let any_of = json!({"anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]}]});
        assert_eq!(names(any_of), some(&["id", "slug"]));
        let all_of = json!({"allOf": [{"properties": {"from": {}}}, {"properties": {"to": {}}}]});
        assert_eq!(names(all_of), some(&["from", "to"]));
        let one_of_refs = json!({"type": "object", "properties": {"mode": {}},
            "oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}],
            "$defs": {"A": {"properties": {"a": {}}}, "B": {"properties": {"b~/": {}}}}});
        assert_eq!(names(one_of_refs), some(&["a", "b~/", "mode"]));
        let pointer = json!({"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"properties": {"q": {}}}}});
        assert_eq!(names(pointer), some(&["q"]));
        let conditional = json!({"properties": {"kind": {}}, "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"properties": {"a_only": {}}}, "else": {"properties": {"b_only": {}}}});
        assert_eq!(names(conditional), some(&["a_only", "b_only", "kind"]));
    }

    /// What tester 7 found the first reading still got wrong (T7-1), and the cost of one
    /// `$ref` repeated (T7-2).
    #[test]
    fn field_names_take_required_names_and_leave_forbidden_ones_and_free_maps() {
        let required_only = json!({"type": "object", "required": ["query"]});
        assert_eq!(names(required_only), some(&["query"]));
        let partly = json!({"type": "object", "properties": {"title": {}},
            "required": ["title", "project_id"]});
        assert_eq!(names(partly), some(&["project_id", "title"]));
        let free_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        assert_eq!(names(free_map), None);
        let closed =
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false});
        assert_eq!(names(closed), some(&["a"]));
        let forbidden = json!({"type": "object", "properties": {"id": {}, "force": false}});
        assert_eq!(names(forbidden), some(&["id"]));
        let draft7 = json!({"type": "object", "properties": {"a": {}},
            "dependencies": {"a": {"properties": {"b": {}}}, "c": ["d"]}});
        assert_eq!(names(draft7), some(&["a", "b", "d"]));
        // One target behind a thousand copies of its `$ref` is read once: read each time,
        // the 2,000 visits would pass the bound and the schema would be sent whole.
        let props: serde_json::Map<String, Value> =
            (0..5_000).map(|i| (format!("p{i}"), json!({}))).collect();
        let blow = json!({"allOf": vec![json!({"$ref": "#/$defs/A"}); 1_000],
            "$defs": {"A": {"type": "object", "properties": props}}});
        assert_eq!(names(blow).map(|n| n.len()), Some(5_000));
    }

    #[test]
    fn no_json_schema_keyword_is_ever_a_field_name() {
        let keywords = [
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "enum",
            "const",
            "definitions",
            "format",
            "examples",
            "deprecated",
            "minProperties",
            "dependentRequired",
            "propertyNames",
            "unevaluatedProperties",
            "readOnly",
            "contentMediaType",
            "dependencies",
            "$defs",
            "$schema",
            "$id",
            "$comment",
            "title",
            "description",
            "type",
        ];
        for k in keywords {
            assert!(is_schema_keyword(k), "{k}");
            let with_props = json!({"properties": {"p": {}}, k: {"properties": {"x": {}}}});
            if let Some(n) = names(with_props) {
                assert!(!n.iter().any(|f| f == k), "{k}: {n:?}");
            }
        }
        let pydantic_v1 = json!({"title": "Args", "type": "object", "properties": {"a": {"format": "date"}},
            "definitions": {"X": {}}, "not": {"required": ["z"]}, "minProperties": 1});
        assert_eq!(names(pydantic_v1), some(&["a"]));
        for k in ["url", "depth", "path", "query"] {
            assert!(!is_schema_keyword(k), "{k}");
        }
    }

    #[test]
    fn unreadable_names_keep_the_schema_whole() {
        for v in [
            json!({"$ref": "#"}),
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}),
            json!({"$ref": "#/$defs/Missing", "$defs": {}}),
            json!({"$ref": "https://example.com/schema.json"}),
            json!({"$ref": "other.json#/A"}),
            json!({"properties": []}),
            json!({"anyOf": {"properties": {"a": {}}}}),
            json!({"anyOf": [{"properties": {"a": {}}}, "string"]}),
            json!({"type": "string"}),
            json!({"enum": [{"a": 1}]}),
            json!({"type": "object", "patternProperties": {"^x": {}}}),
            json!({"type": "object", "url": "string"}),
            json!({"title": "string", "description": "string"}),
            json!([]),
            json!("string"),
            json!(null),
        ] {
            assert_eq!(names(v.clone()), None, "{v}");
            let mut p = pack();
            p.metadata.input_schema = Some(Schema::Full(v.clone()));
            p.apply(TrimStep::Schemas);
            assert_eq!(p.metadata.input_schema, Some(Schema::Full(v)), "kept whole");
        }
        // A chain deeper than the bound, and allOf-of-refs that would multiply, give up.
        let mut deep = json!({"properties": {"leaf": {}}});
        for _ in 0..=MAX_SCHEMA_DEPTH {
            deep = json!({"allOf": [deep]});
        }
        assert_eq!(names(deep), None);
        let mut defs = serde_json::Map::new();
        for i in 0..12 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"allOf": [{"$ref": next}, {"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("d12".into(), json!({"properties": {"z": {}}}));
        assert_eq!(names(json!({"$ref": "#/$defs/d0", "$defs": defs})), None);
    }
}
