//! What an entry says, pack or pipeline alike, read into per-field words for indexing.

use serde_json::Value;

use super::{Field, NF};
use crate::core::catalog::{PipelineStep, RoutingGuide, Schema};
use crate::core::text;

/// What an entry says, pack or pipeline alike, borrowed for indexing.
pub(super) struct EntryText<'a> {
    /// A pack's name; a pipeline's id, and its name when that differs.
    names: Vec<&'a str>,
    intent_keywords: &'a [String],
    accepts: &'a [String],
    produces: &'a [String],
    supersedes: &'a [String],
    description: &'a str,
    typical_use: &'a str,
    steps: &'a [PipelineStep],
    schemas: [Option<&'a Schema>; 2],
}

pub(super) fn entry_text(guide: &RoutingGuide, i: usize) -> EntryText<'_> {
    if i < guide.packs.len() {
        let p = &guide.packs[i];
        let m = &p.metadata;
        EntryText {
            names: vec![&p.name],
            intent_keywords: &m.intent_keywords,
            accepts: &m.accepts,
            produces: &m.produces,
            supersedes: &[],
            description: &p.description,
            typical_use: &m.typical_use,
            steps: &[],
            schemas: [m.input_schema.as_ref(), m.output_schema.as_ref()],
        }
    } else {
        let p = &guide.pipelines[i - guide.packs.len()];
        let m = &p.metadata;
        let mut names = vec![p.id.as_str()];
        if p.name != p.id {
            names.push(&p.name);
        }
        EntryText {
            names,
            intent_keywords: &m.intent_keywords,
            accepts: &m.accepts,
            produces: &m.produces,
            supersedes: &m.supersedes,
            description: &p.description,
            typical_use: &m.typical_use,
            steps: &m.steps,
            schemas: [m.inputs.as_ref(), m.outputs.as_ref()],
        }
    }
}

/// An entry's input and output schemas.
pub(super) fn entry_text_schemas(guide: &RoutingGuide, i: usize) -> [Option<&Schema>; 2] {
    entry_text(guide, i).schemas
}

/// Separators of a name's segments (`us_history.get_event_info`).
const NAME_SEPARATORS: [char; 4] = ['_', '.', '-', '/'];

/// `name` as its words are read: a segment `us` (`us_history`) is the country, written as
/// the text says the country ("US"), since a name holds no pronoun.
fn name_as_read(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.split(NAME_SEPARATORS).any(|seg| seg == "us") {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    for seg in name.split_inclusive(NAME_SEPARATORS) {
        let word = seg.trim_end_matches(NAME_SEPARATORS);
        out.push_str(if word == "us" { "US" } else { word });
        out.push_str(&seg[word.len()..]);
    }
    std::borrow::Cow::Owned(out)
}

/// The per-field words of one entry.
pub(super) fn entry_fields(guide: &RoutingGuide, i: usize) -> [Vec<String>; NF] {
    let mut f: [Vec<String>; NF] = Default::default();
    let mut add = |field: Field, text: &str| {
        text::for_each_term(text, |t| f[field as usize].push(t));
    };
    let e = entry_text(guide, i);
    e.names
        .iter()
        .for_each(|n| add(Field::Name, &name_as_read(n)));
    e.intent_keywords
        .iter()
        .for_each(|k| add(Field::IntentKeywords, k));
    e.accepts
        .iter()
        .chain(e.produces)
        .for_each(|k| add(Field::AcceptsProduces, k));
    e.supersedes.iter().for_each(|k| add(Field::Supersedes, k));
    add(Field::Description, e.description);
    add(Field::TypicalUse, e.typical_use);
    for s in e.steps {
        add(Field::Parameters, &s.name);
        add(Field::Parameters, &s.pack);
    }
    for s in e.schemas.into_iter().flatten() {
        schema_text(s, &mut add);
    }
    f
}

/// Property names, their descriptions (split where examples begin) and their enum values,
/// of a schema a few levels deep.
fn schema_text(schema: &Schema, f: &mut dyn FnMut(Field, &str)) {
    match schema {
        Schema::Fields(names) => names.iter().for_each(|n| f(Field::ParameterNames, n)),
        Schema::Full(v) => {
            walk_schema(v, f, 0);
            // Names the walk of `properties` did not meet: behind a `$ref`, in `allOf`
            // branches, only `required` (tester 6 F1's shapes); as the trimmer reads them.
            let props = v.get("properties").and_then(Value::as_object);
            schema
                .declared_names()
                .iter()
                .filter(|n| props.is_none_or(|p| !p.contains_key(n.as_str())))
                .for_each(|n| f(Field::ParameterNames, n));
        }
    }
}

/// Where a description turns to examples.
const EXAMPLE_MARKERS: &[&str] = &[
    "e.g.",
    "e.g,",
    "eg.",
    "for example",
    "for instance",
    "such as",
    "example:",
    "examples:",
];

/// A parameter description cut where it starts giving examples: `("The city and state,",
/// "e.g. Los Angeles, CA")`. The examples run to the end of the description.
fn split_examples(description: &str) -> (&str, &str) {
    // ASCII lower-casing keeps byte offsets, so a position found in `lower` cuts `description`.
    let lower = description.to_ascii_lowercase();
    EXAMPLE_MARKERS
        .iter()
        .filter_map(|m| lower.find(m))
        .min()
        .map_or((description, ""), |at| description.split_at(at))
}

fn walk_schema(v: &Value, f: &mut dyn FnMut(Field, &str), depth: usize) {
    if depth > 4 {
        return;
    }
    // Enum values may sit on a property or on its array's items (`"items": {"enum": …}`).
    if let Some(values) = v.get("enum").and_then(Value::as_array) {
        values
            .iter()
            .filter_map(Value::as_str)
            .for_each(|v| f(Field::Parameters, operator_words(v).unwrap_or(v)));
    }
    if let Some(items) = v.get("items") {
        walk_schema(items, f, depth + 1);
    }
    let Some(props) = v.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        f(Field::ParameterNames, name);
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            let (purpose, examples) = split_examples(d);
            f(Field::Parameters, purpose);
            f(Field::Examples, examples);
        }
        walk_schema(prop, f, depth + 1);
    }
}

/// A comparison operator among enum values, in words: the symbol holds no word to match,
/// yet "where age is greater than 25" asks for the tool that offers `>`.
fn operator_words(value: &str) -> Option<&'static str> {
    Some(match value.trim() {
        ">" => "greater than",
        "<" => "less than",
        ">=" => "greater than or equal",
        "<=" => "less than or equal",
        "=" | "==" => "equal",
        "!=" | "<>" => "not equal",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::name_as_read;

    /// A name's `us` segment is the country (`us_history` is United States history); a
    /// segment that only holds the letters is another word.
    #[test]
    fn a_names_us_segment_is_the_country() {
        assert_eq!(
            name_as_read("us_history.get_event_info"),
            "US_history.get_event_info"
        );
        assert_eq!(name_as_read("census.us"), "census.US");
        assert_eq!(name_as_read("weather-us-states"), "weather-US-states");
        for other in ["campus_map", "bus_stop", "status", "user_us_er"] {
            let read = name_as_read(other);
            assert_eq!(read, other.replace("_us_", "_US_"), "{other}");
        }
    }
}
