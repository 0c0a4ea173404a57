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
    /// Field names of an object schema (JSON Schema or BFCL's `dict`), sorted.
    pub fn field_names(&self) -> Vec<String> {
        match self {
            Schema::Fields(f) => f.clone(),
            Schema::Full(v) => {
                let mut names: Vec<String> = match v.get("properties").and_then(Value::as_object) {
                    Some(props) => props.keys().cloned().collect(),
                    // A flat `{field: type}` map, as some catalogs write inputs.
                    None => v
                        .as_object()
                        .map(|o| {
                            o.keys()
                                .filter(|k| !is_schema_keyword(k))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                names.sort();
                names
            }
        }
    }
}

fn is_schema_keyword(k: &str) -> bool {
    k.starts_with('$')
        || matches!(
            k,
            "type"
                | "required"
                | "additionalProperties"
                | "description"
                | "title"
                | "items"
                | "properties"
                | "default"
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

fn reduce_schema(schema: &mut Option<Schema>) {
    if let Some(s @ Schema::Full(_)) = schema {
        *s = Schema::Fields(s.field_names());
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
        assert_eq!(s.field_names(), vec!["a", "b"]);
        let flat = Schema::Full(json!({"url": "string", "depth": "int"}));
        assert_eq!(flat.field_names(), vec!["depth", "url"]);
    }
}
