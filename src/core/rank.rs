//! Relevance ranking of catalog entries for an intent (DESIGN §2.5): field-weighted BM25
//! (BM25F) over split, stemmed words, a name-coverage term, and the history prior — past
//! plans for similar intents, weighted by how they turned out. Every score explains itself.

use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use crate::core::budget::{BudgetRow, Tier};
use crate::core::catalog::{PipelineStep, RoutingGuide, Schema};
use crate::core::text;

/// Where in an entry a word was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Name,
    IntentKeywords,
    AcceptsProduces,
    Supersedes,
    Description,
    TypicalUse,
    ParameterNames,
    Parameters,
    /// Example values in parameter descriptions ("e.g. Los Angeles, CA"): they show a value's
    /// shape, not what the tool is for, so a match there counts little. (Enum values stay with
    /// the parameters: they say what the tool covers.)
    Examples,
}

const NF: usize = 9;

impl Field {
    pub const ALL: [Field; NF] = [
        Field::Name,
        Field::IntentKeywords,
        Field::AcceptsProduces,
        Field::Supersedes,
        Field::Description,
        Field::TypicalUse,
        Field::ParameterNames,
        Field::Parameters,
        Field::Examples,
    ];

    /// How much a match here counts, and how strongly the field's length dampens it (BM25 b).
    /// A name is short and chosen with care; schema text is long and incidental.
    fn weight_and_b(self) -> (f64, f64) {
        match self {
            Field::Name => (2.0, 0.3),
            Field::IntentKeywords => (2.5, 0.5),
            Field::AcceptsProduces => (1.5, 0.5),
            Field::Supersedes => (1.0, 0.5),
            Field::Description => (1.0, 0.75),
            Field::TypicalUse => (0.8, 0.75),
            Field::ParameterNames => (1.5, 0.5),
            Field::Parameters => (1.0, 0.75),
            Field::Examples => (0.3, 0.75),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::IntentKeywords => "intent_keywords",
            Field::AcceptsProduces => "accepts/produces",
            Field::Supersedes => "supersedes",
            Field::Description => "description",
            Field::TypicalUse => "typical_use",
            Field::ParameterNames => "parameter names",
            Field::Parameters => "parameters",
            Field::Examples => "examples",
        }
    }
}

/// BM25 saturation.
const K1: f64 = 1.2;
/// Points for a name whose every word the intent mentions, scaled by those words' rarity.
const NAME_COVERAGE_WEIGHT: f64 = 0.6;
/// A related word (`law` for `lawyer`) earns this share of a match.
const RELATED_WEIGHT: f64 = 0.5;
/// Words shorter than this reach no related words (`art` would reach `artist`, `article`).
const MIN_RELATED_LEN: usize = 4;
/// What an entry named for another kind of action keeps of its score.
const ACTION_CONFLICT: f64 = 0.5;
/// Share of a match another word for the same kind of action earns (`find` → `get`): weaker
/// than a related form of the word itself, since every read tool says one of them.
const ACTION_SYNONYM_WEIGHT: f64 = 0.2;
/// Endings that turn a short word into the one who does it.
const AGENT_SUFFIXES: [&str; 5] = ["er", "or", "ist", "yer", "ian"];
/// A compound splits into a head of at least 3 letters and a known tail of at least this many.
const MIN_COMPOUND_TAIL: usize = 4;
/// A word longer than this many bytes reaches no related words and is not read as a
/// compound. No word a person writes is this long (the longest in BFCL's questions and
/// functions is 28 bytes), but a hash, a base64 blob or a 1 MB run of one letter is, and
/// looking up each of its prefixes and suffixes costs the square of its length (a 1 MB name
/// took minutes to index).
pub const MAX_RELATED_LEN: usize = 64;
/// Below this confidence the two-pass filter escalates (rows that allow it).
pub const ESCALATE_BELOW: f64 = 0.2;
/// Past intents at least this similar (Jaccard over content words) inform the prior.
pub const PRIOR_MIN_SIMILARITY: f64 = 0.3;
/// The prior moves a score by at most this share of the best lexical score.
pub const PRIOR_STRENGTH: f64 = 0.5;

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; NF],
}

/// An inverted index over a catalog, built once per catalog and queried per intent.
#[derive(Debug, Clone)]
pub struct RankIndex {
    names: Vec<String>,
    postings: HashMap<String, Vec<Posting>>,
    lens: Vec<[u32; NF]>,
    avg_len: [f64; NF],
    /// Each entry's distinct name words with their IDF.
    name_terms: Vec<Vec<NameTerm>>,
    /// The kinds of action each entry's name names (bit per [`Action`]).
    name_actions: Vec<u8>,
    /// Adjacent word pairs of each entry's name and description.
    pairs: Vec<HashSet<(String, String)>>,
    /// Every indexed word, sorted, for prefix look-ups.
    vocab: Vec<String>,
    /// Known word → the indexed compounds that end with it (`distanc` → `geodistanc`).
    compounds: HashMap<String, Vec<String>>,
    params: RankParams,
}

/// The ranker's weights, as measured with `ctxconsole eval rank` on BFCL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    /// (weight, b) per field, in [`Field::ALL`] order.
    pub fields: [(f64, f64); NF],
    pub k1: f64,
    pub name_coverage: f64,
    /// Exponent of the query-coverage factor (0 = off).
    pub coord: f64,
    pub pair: f64,
    /// Factor for an entry named for another kind of action than the intent asks (1 = off).
    pub action_conflict: f64,
    /// Share of a match a related word earns (prefix, stem-of, compound part; 0 = off).
    pub related: f64,
    /// Share of a match another word for the same kind of action earns (0 = off).
    pub action_synonym: f64,
    pub expand: bool,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            fields: Field::ALL.map(Field::weight_and_b),
            k1: K1,
            name_coverage: NAME_COVERAGE_WEIGHT,
            coord: 0.5,
            pair: 1.0,
            related: RELATED_WEIGHT,
            action_synonym: ACTION_SYNONYM_WEIGHT,
            action_conflict: ACTION_CONFLICT,
            expand: true,
        }
    }
}

/// One entry's score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scored {
    /// Entry index in catalog order (packs first).
    pub index: usize,
    pub score: f64,
    pub lexical: f64,
    pub prior: f64,
    /// Points from an attachment's outline, read at a low weight (0 without one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attachment: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// How sure the ranking is of its top entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// `margin × coverage`, 0..1.
    pub value: f64,
    /// How far the first score stands above the second, as a share of the first.
    pub margin: f64,
    /// Share of the intent's word weight (IDF) that the first entry matches.
    pub coverage: f64,
}

/// A catalog ranked for one intent, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    pub terms: Vec<String>,
    /// Adjacent pairs of the written words, for explaining.
    #[serde(skip)]
    pub pairs: Vec<(String, String)>,
    pub order: Vec<Scored>,
    pub confidence: Confidence,
}

impl Ranking {
    /// Entry indices, best first.
    pub fn indices(&self) -> Vec<usize> {
        self.order.iter().map(|s| s.index).collect()
    }

    /// 1-based rank of the first entry whose name is `name`.
    pub fn position_of(&self, index: &RankIndex, name: &str) -> Option<usize> {
        self.order
            .iter()
            .position(|s| index.names[s.index] == name)
            .map(|p| p + 1)
    }
}

/// One matched word in one field, with the points it earned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermMatch {
    pub term: String,
    /// The catalog word it matched when that is not the term itself (`law` → `lawyer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub field: Field,
    pub points: f64,
}

/// What the history prior added for an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorMatch {
    pub plans: usize,
    /// Outcome-weighted mean over those plans, -1..1.
    pub outcome: f64,
    pub points: f64,
}

/// Why an entry scored what it did: `((Σ matches + pairs) × coverage + name_coverage) ×
/// action + prior` is its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub name: String,
    pub score: f64,
    pub matches: Vec<TermMatch>,
    /// Points for adjacent intent words found side by side in the name or description.
    pub pairs: f64,
    /// The share of the intent's word weight the entry matched, raised to the `coord`
    /// power: an entry that answers half the question scales down.
    pub coverage: f64,
    /// Points for a name whose words the intent mentions.
    pub name_coverage: f64,
    /// Below 1 when the entry is named for another kind of action than the intent asks.
    pub action: f64,
    pub prior: Option<PriorMatch>,
    /// Points from the attachments' outlines (see `core::request`), 0 without any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attachment: f64,
}

impl Explanation {
    /// `memory.store 7.31 = (remember·name 3.10 + note·description 1.02 + pairs 1.00) ×
    /// coverage 0.80 + name 1.20 + prior +0.80 (3 plans)`; an entry named for another kind
    /// of action than asked has its lexical part wrapped in `(…) × other action 0.50`.
    pub fn one_line(&self) -> String {
        let mut words: Vec<String> = self
            .matches
            .iter()
            .map(|m| {
                let via = m.via.as_ref().map_or(String::new(), |v| format!("→{v}"));
                format!("{}{via}·{} {:.2}", m.term, m.field.label(), m.points)
            })
            .collect();
        if self.pairs > 0.0 {
            words.push(format!("pairs {:.2}", self.pairs));
        }
        let mut lexical = Vec::new();
        if !words.is_empty() {
            lexical.push(format!(
                "({}) × coverage {:.2}",
                words.join(" + "),
                self.coverage
            ));
        }
        if self.name_coverage > 0.0 {
            lexical.push(format!("name {:.2}", self.name_coverage));
        }
        let mut parts = Vec::new();
        if self.action < 1.0 && !lexical.is_empty() {
            parts.push(format!(
                "({}) × other action {:.2}",
                lexical.join(" + "),
                self.action
            ));
        } else {
            parts.extend(lexical);
        }
        if let Some(p) = &self.prior {
            parts.push(format!("prior {:+.2} ({} plans)", p.points, p.plans));
        }
        if self.attachment != 0.0 {
            parts.push(format!("attachment outline {:.2}", self.attachment));
        }
        if parts.is_empty() {
            parts.push("no match".into());
        }
        format!("{} {:.2} = {}", self.name, self.score, parts.join(" + "))
    }

    /// What the parts add up to (the score, up to rounding).
    pub fn total(&self) -> f64 {
        let words: f64 = self.matches.iter().map(|m| m.points).sum();
        ((words + self.pairs) * self.coverage + self.name_coverage) * self.action
            + self.prior.as_ref().map_or(0.0, |p| p.points)
            + self.attachment
    }
}

/// What an entry says, pack or pipeline alike, borrowed for indexing.
struct EntryText<'a> {
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

fn entry_text(guide: &RoutingGuide, i: usize) -> EntryText<'_> {
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

/// The per-field words of one entry.
fn entry_fields(guide: &RoutingGuide, i: usize) -> [Vec<String>; NF] {
    let mut f: [Vec<String>; NF] = Default::default();
    let mut add = |field: Field, text: &str| {
        text::for_each_term(text, |t| f[field as usize].push(t));
    };
    let e = entry_text(guide, i);
    e.names.iter().for_each(|n| add(Field::Name, n));
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
        Schema::Full(v) => walk_schema(v, f, 0),
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

/// One distinct word of an entry's name, with its IDF.
#[derive(Debug, Clone)]
struct NameTerm {
    term: String,
    idf: f64,
}

/// An entry's distinct name words, each with its IDF over the whole catalog.
fn name_terms_of(
    mut words: Vec<String>,
    n: usize,
    postings: &HashMap<String, Vec<Posting>>,
) -> Vec<NameTerm> {
    words.sort();
    words.dedup();
    words
        .into_iter()
        .map(|term| {
            let idf = idf(n, postings.get(term.as_str()).map_or(0, Vec::len));
            NameTerm { term, idf }
        })
        .collect()
}

/// Indexed words that are a head glued to another indexed word (`geodistanc` = `geo` +
/// `distanc`), keyed by that tail.
fn compounds_of(
    vocab: &[String],
    postings: &HashMap<String, Vec<Posting>>,
) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for word in vocab
        .iter()
        .filter(|w| w.is_ascii() && w.len() <= MAX_RELATED_LEN)
    {
        for cut in 3..=word.len().saturating_sub(MIN_COMPOUND_TAIL) {
            let tail = &word[cut..];
            if postings.contains_key(tail) {
                out.entry(tail.to_string()).or_default().push(word.clone());
                break;
            }
        }
    }
    out
}

fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

impl RankIndex {
    pub fn new(guide: &RoutingGuide) -> RankIndex {
        RankIndex::with_params(guide, RankParams::default())
    }

    /// An index with other weights, for measuring them (`examples/rank_sweep.rs`).
    pub fn with_params(guide: &RoutingGuide, params: RankParams) -> RankIndex {
        let n = guide.entry_count();
        let mut postings: HashMap<String, Vec<Posting>> = HashMap::new();
        let mut lens = Vec::with_capacity(n);
        let mut name_words = Vec::with_capacity(n);
        let mut name_actions = Vec::with_capacity(n);
        let mut pairs = Vec::with_capacity(n);
        let mut totals = [0f64; NF];
        for i in 0..n {
            let mut fields = entry_fields(guide, i);
            let mut len = [0u32; NF];
            let mut tfs: HashMap<&str, [u16; NF]> = HashMap::new();
            for (fi, words) in fields.iter().enumerate() {
                len[fi] = words.len() as u32;
                totals[fi] += words.len() as f64;
                for w in words {
                    let tf = tfs.entry(w.as_str()).or_insert([0; NF]);
                    tf[fi] = tf[fi].saturating_add(1);
                }
            }
            for (w, tf) in tfs {
                postings
                    .entry(w.to_string())
                    .or_default()
                    .push(Posting { doc: i as u32, tf });
            }
            let mut pair_set = HashSet::new();
            for f in [Field::Name, Field::Description] {
                for w in fields[f as usize].windows(2) {
                    pair_set.insert((w[0].clone(), w[1].clone()));
                }
            }
            pairs.push(pair_set);
            name_actions.push(actions_of(&fields[Field::Name as usize]));
            name_words.push(std::mem::take(&mut fields[Field::Name as usize]));
            lens.push(len);
        }
        let avg_len = std::array::from_fn(|f| {
            if n == 0 {
                1.0
            } else {
                (totals[f] / n as f64).max(1.0)
            }
        });
        let names = guide.entry_names().map(|(n, _)| n.to_string()).collect();
        let mut vocab: Vec<String> = postings.keys().cloned().collect();
        vocab.sort();
        let compounds = compounds_of(&vocab, &postings);
        // Name words weigh by their rarity, known only once every entry is indexed.
        let name_terms = name_words
            .into_iter()
            .map(|words| name_terms_of(words, n, &postings))
            .collect();
        RankIndex {
            names,
            postings,
            lens,
            avg_len,
            name_terms,
            name_actions,
            pairs,
            vocab,
            compounds,
            params,
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every entry's name, in catalog order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    pub fn name(&self, index: usize) -> &str {
        &self.names[index]
    }

    fn idf(&self, term: &str) -> f64 {
        let df = self.postings.get(term).map_or(0, Vec::len);
        idf(self.len(), df)
    }

    /// Per-field BM25F pieces of one posting: the weighted, length-normalised term
    /// frequency in each field.
    fn field_tf(&self, p: &Posting) -> [f64; NF] {
        let len = &self.lens[p.doc as usize];
        std::array::from_fn(|f| {
            if p.tf[f] == 0 {
                return 0.0;
            }
            let (w, b) = self.params.fields[f];
            let norm = 1.0 - b + b * len[f] as f64 / self.avg_len[f];
            w * p.tf[f] as f64 / norm
        })
    }

    /// How much a match counts towards covering the intent: a word found only among example
    /// values ("e.g. New York") says the entry takes such a value, not that it does what was
    /// asked, so it covers at the examples field's weight.
    fn coverage_share(&self, p: &Posting) -> f64 {
        let only_examples =
            p.tf.iter()
                .enumerate()
                .all(|(f, &tf)| tf == 0 || f == Field::Examples as usize);
        if only_examples {
            self.params.fields[Field::Examples as usize].0.min(1.0)
        } else {
            1.0
        }
    }

    fn term_points(idf: f64, combined_tf: f64, k1: f64) -> f64 {
        idf * combined_tf * (k1 + 1.0) / (combined_tf + k1)
    }

    /// Vocabulary words a query word reaches beyond itself, with the share of a match each
    /// is worth (`related`; none when it is 0): the longer words it begins (`contrib` →
    /// `contribution`), the shorter words it begins with (`contribution` → `contrib`), and
    /// the compounds it ends (`distanc` → `geodistanc`).
    fn related<'a>(&'a self, term: &str) -> Vec<(&'a str, f64)> {
        let mut out = self.action_synonyms(term);
        let r = self.params.related;
        if r <= 0.0 || !term.is_ascii() || term.len() < 3 || term.len() > MAX_RELATED_LEN {
            return out;
        }
        if term.len() < MIN_RELATED_LEN {
            // A short word reaches only the one who does it: `law` → `lawyer`, `win` → `winner`.
            let doubled = term.chars().last().map(|c| format!("{term}{c}"));
            for base in std::iter::once(term.to_string()).chain(doubled) {
                for suffix in AGENT_SUFFIXES {
                    if let Some((v, _)) = self.postings.get_key_value(&format!("{base}{suffix}")) {
                        out.push((v.as_str(), r));
                    }
                }
            }
            return out;
        }
        let start = self.vocab.partition_point(|v| v.as_str() < term);
        out.extend(
            self.vocab[start..]
                .iter()
                .take_while(|v| v.starts_with(term))
                .filter(|v| v.len() >= term.len() + 2)
                .map(|v| (v.as_str(), r)),
        );
        for k in MIN_RELATED_LEN..term.len().saturating_sub(1) {
            if let Some((v, _)) = self.postings.get_key_value(&term[..k]) {
                out.push((v.as_str(), r));
            }
        }
        if let Some(compounds) = self.compounds.get(term) {
            out.extend(compounds.iter().map(|v| (v.as_str(), r)));
        }
        out
    }

    /// Indexed words for the same kind of action as `term` (`find` → `get`, `search`, `list`),
    /// each worth `action_synonym` of a match: "find the driving distance" is what
    /// `get_driving_distance` does.
    fn action_synonyms<'a>(&'a self, term: &str) -> Vec<(&'a str, f64)> {
        let share = self.params.action_synonym;
        let Some(kind) = action_of(term).filter(|_| share > 0.0) else {
            return Vec::new();
        };
        ACTION_WORDS
            .iter()
            .filter(|&&(w, k)| k == kind && w != term)
            .filter_map(|&(w, _)| self.postings.get_key_value(w))
            .map(|(v, _)| (v.as_str(), share))
            .collect()
    }

    /// Every match of one query word (the `i`th), through itself and the words it reaches;
    /// an entry may come more than once (its best is what counts).
    fn each_match<'a>(&'a self, query: &'a Query, i: usize, mut f: impl FnMut(TermHit<'a>)) {
        let term = query.terms[i].as_str();
        let term_idf = self.idf(term);
        let itself = std::iter::once((term, 1.0));
        for (via, weight) in itself.chain(query.related[i].iter().copied()) {
            let Some(list) = self.postings.get(via) else {
                continue;
            };
            // A related word never counts for more than the word itself would.
            let idf = if via == term {
                term_idf
            } else {
                self.idf(via).min(term_idf)
            };
            for p in list {
                let combined: f64 = self.field_tf(p).iter().sum();
                f(TermHit {
                    via,
                    posting: p,
                    points: weight * Self::term_points(idf, combined, self.params.k1),
                    matched_idf: weight * idf * self.coverage_share(p),
                });
            }
        }
    }

    /// One entry's best match of one query word (the `i`th).
    fn best_match<'a>(&'a self, query: &'a Query, i: usize, doc: usize) -> Option<TermHit<'a>> {
        let mut best: Option<TermHit> = None;
        self.each_match(query, i, |hit| {
            if hit.posting.doc as usize == doc
                && best.as_ref().is_none_or(|b| hit.points > b.points)
            {
                best = Some(hit);
            }
        });
        best
    }

    /// Name coverage: the IDF share of the entry's name words that the intent reaches.
    fn name_coverage(&self, doc: usize, reached: &HashMap<&str, f64>) -> f64 {
        let mut hit = 0.0;
        let mut total = 0.0;
        for t in &self.name_terms[doc] {
            hit += reached.get(t.term.as_str()).copied().unwrap_or(0.0) * t.idf;
            total += t.idf;
        }
        if total == 0.0 { 0.0 } else { hit / total }
    }

    /// An entry's lexical score from its summed word points, put together the one way both
    /// ranking and explaining use.
    fn lexical_parts(
        &self,
        doc: usize,
        word_points: f64,
        matched_idf: f64,
        query: &Query,
    ) -> LexicalParts {
        let pairs = self.params.pair
            * query
                .pairs
                .iter()
                .filter(|p| self.pairs[doc].contains(*p))
                .count() as f64;
        let coverage = if self.params.coord > 0.0 && query.idf_total > 0.0 {
            (matched_idf / query.idf_total)
                .clamp(0.0, 1.0)
                .powf(self.params.coord)
        } else {
            1.0
        };
        let cov = self.name_coverage(doc, &query.reached);
        let name = if cov > 0.0 {
            let max_name_idf = self.name_terms[doc]
                .iter()
                .map(|t| t.idf)
                .fold(0.0, f64::max);
            self.params.name_coverage * cov * cov * max_name_idf
        } else {
            0.0
        };
        let conflict = query.actions != 0
            && self.name_actions[doc] != 0
            && query.actions & self.name_actions[doc] == 0;
        LexicalParts {
            words: word_points,
            pairs,
            coverage,
            name,
            action: if conflict {
                self.params.action_conflict
            } else {
                1.0
            },
        }
    }

    /// The intent's words (written, then expanded), their adjacent pairs, and the
    /// vocabulary they reach.
    fn query<'a>(&'a self, intent: &str) -> Query<'a> {
        let words = text::terms(intent);
        // Adjacent pairs of what was written (not of the expansion below).
        let pairs: Vec<(String, String)> = words
            .windows(2)
            .map(|w| (w[0].clone(), w[1].clone()))
            .collect();
        let mut terms = words;
        if self.params.expand {
            terms.extend(answer_type_expansion(intent));
        }
        dedup_keep_order(&mut terms);
        self.query_of(terms, pairs)
    }

    fn query_of<'a>(&'a self, terms: Vec<String>, pairs: Vec<(String, String)>) -> Query<'a> {
        let mut reached: HashMap<&'a str, f64> = HashMap::new();
        let mut related = Vec::with_capacity(terms.len());
        let mut idf_total = 0.0;
        for t in &terms {
            idf_total += self.idf(t);
            if let Some((v, _)) = self.postings.get_key_value(t.as_str()) {
                reached.insert(v.as_str(), 1.0);
            }
            let words = self.related(t);
            for &(v, w) in &words {
                let e = reached.entry(v).or_insert(0.0);
                *e = e.max(w);
            }
            related.push(words);
        }
        Query {
            actions: actions_of(&terms),
            terms,
            related,
            pairs,
            reached,
            idf_total,
        }
    }

    /// Rank every entry for `intent`. Ties keep catalog order.
    pub fn rank(&self, intent: &str, prior: Option<&HistoryPrior>) -> Ranking {
        let query = self.query(intent);
        let n = self.len();
        let mut word_points = vec![0f64; n];
        let mut matched_idf = vec![0f64; n];
        let mut touched: Vec<usize> = Vec::new();
        let mut seen = vec![false; n];
        // Per query word, each entry's best match (scratch, reset after each word).
        let mut term_points = vec![0f64; n];
        let mut term_idf = vec![0f64; n];
        let mut term_touched: Vec<usize> = Vec::new();
        for i in 0..query.terms.len() {
            self.each_match(&query, i, |hit| {
                let d = hit.posting.doc as usize;
                if term_points[d] == 0.0 {
                    term_touched.push(d);
                }
                if hit.points > term_points[d] {
                    term_points[d] = hit.points;
                    term_idf[d] = hit.matched_idf;
                }
            });
            for d in term_touched.drain(..) {
                if !seen[d] {
                    seen[d] = true;
                    touched.push(d);
                }
                word_points[d] += term_points[d];
                matched_idf[d] += term_idf[d];
                term_points[d] = 0.0;
                term_idf[d] = 0.0;
            }
        }
        let mut lexical = vec![0f64; n];
        for &d in &touched {
            lexical[d] = self
                .lexical_parts(d, word_points[d], matched_idf[d], &query)
                .total();
        }
        let best_lexical = touched.iter().map(|&d| lexical[d]).fold(0.0, f64::max);
        let boosts = prior_boosts(&query, prior).unwrap_or_default();
        let mut order: Vec<Scored> = (0..n)
            .map(|i| {
                let prior = boosts
                    .get(self.names[i].as_str())
                    .map_or(0.0, |b| b.strength * PRIOR_STRENGTH * best_lexical.max(1.0));
                Scored {
                    index: i,
                    score: lexical[i] + prior,
                    lexical: lexical[i],
                    prior,
                    attachment: 0.0,
                }
            })
            .collect();
        order.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        let confidence = confidence(&order, &matched_idf, query.idf_total);
        Ranking {
            terms: query.terms,
            pairs: query.pairs,
            order,
            confidence,
        }
    }

    /// Why entry `index` scored what it did in `ranking`: every term's points by field, the
    /// pair bonus, the coverage factor, name coverage and the prior, which add up to the
    /// score.
    pub fn explain(
        &self,
        ranking: &Ranking,
        index: usize,
        prior: Option<&HistoryPrior>,
    ) -> Explanation {
        let query = self.query_of(ranking.terms.clone(), ranking.pairs.clone());
        let boosts = prior_boosts(&query, prior);
        self.explain_with(ranking, index, &query, boosts.as_ref())
    }

    /// Explanations of several entries of one ranking, sharing the work they have in common.
    pub fn explain_top(
        &self,
        ranking: &Ranking,
        indices: &[usize],
        prior: Option<&HistoryPrior>,
    ) -> Vec<Explanation> {
        let query = self.query_of(ranking.terms.clone(), ranking.pairs.clone());
        let boosts = prior_boosts(&query, prior);
        indices
            .iter()
            .map(|&i| self.explain_with(ranking, i, &query, boosts.as_ref()))
            .collect()
    }

    fn explain_with(
        &self,
        ranking: &Ranking,
        index: usize,
        query: &Query,
        boosts: Option<&HashMap<&str, Boost>>,
    ) -> Explanation {
        let mut matches = Vec::new();
        let (mut word_points, mut matched_idf) = (0.0, 0.0);
        for (i, t) in query.terms.iter().enumerate() {
            let Some(hit) = self.best_match(query, i, index) else {
                continue;
            };
            word_points += hit.points;
            matched_idf += hit.matched_idf;
            let ftf = self.field_tf(hit.posting);
            let combined: f64 = ftf.iter().sum();
            for (f, part) in ftf.iter().enumerate() {
                if *part > 0.0 {
                    matches.push(TermMatch {
                        term: t.clone(),
                        via: (hit.via != t).then(|| hit.via.to_string()),
                        field: Field::ALL[f],
                        points: hit.points * part / combined,
                    });
                }
            }
        }
        matches.sort_by(|a, b| b.points.total_cmp(&a.points));
        let scored = ranking.order.iter().find(|s| s.index == index);
        let prior_match = match (boosts, scored) {
            (Some(boosts), Some(s)) if s.prior != 0.0 => {
                boosts.get(self.names[index].as_str()).map(|b| PriorMatch {
                    plans: b.plans,
                    outcome: b.outcome,
                    points: s.prior,
                })
            }
            _ => None,
        };
        let parts = if matches.is_empty() {
            LexicalParts::NONE
        } else {
            self.lexical_parts(index, word_points, matched_idf, query)
        };
        Explanation {
            name: self.names[index].clone(),
            score: scored.map_or(0.0, |s| s.score),
            matches,
            pairs: parts.pairs,
            coverage: parts.coverage,
            name_coverage: parts.name,
            action: parts.action,
            prior: prior_match,
            attachment: scored.map_or(0.0, |s| s.attachment),
        }
    }
}

fn prior_boosts<'p>(
    query: &Query,
    prior: Option<&'p HistoryPrior>,
) -> Option<HashMap<&'p str, Boost>> {
    let terms: HashSet<&str> = query.terms.iter().map(String::as_str).collect();
    prior.map(|p| p.boosts(&terms))
}

/// The intent as ranking sees it.
struct Query<'a> {
    terms: Vec<String>,
    /// Per term, the indexed words it reaches beyond itself (see [`RankIndex::related`]).
    related: Vec<Vec<(&'a str, f64)>>,
    pairs: Vec<(String, String)>,
    /// Vocabulary words the terms reach, with the best share of a match.
    reached: HashMap<&'a str, f64>,
    /// Summed IDF of the terms: the whole of what the intent asks for.
    idf_total: f64,
    /// The kinds of action the intent asks for (bit per [`Action`]).
    actions: u8,
}

/// One entry's best match of one query word.
struct TermHit<'a> {
    /// The vocabulary word that matched (the query word itself, or one it reaches).
    via: &'a str,
    posting: &'a Posting,
    points: f64,
    matched_idf: f64,
}

/// The pieces of a lexical score: `((words + pairs) × coverage + name) × action`.
#[derive(Debug, Clone, Copy)]
struct LexicalParts {
    words: f64,
    pairs: f64,
    coverage: f64,
    name: f64,
    action: f64,
}

impl LexicalParts {
    const NONE: LexicalParts = LexicalParts {
        words: 0.0,
        pairs: 0.0,
        coverage: 0.0,
        name: 0.0,
        action: 1.0,
    };

    fn total(&self) -> f64 {
        ((self.words + self.pairs) * self.coverage + self.name) * self.action
    }
}

/// What an action word does. An entry named for one kind is a poor pick for an intent that
/// asks only for another: "find the player's profile" is not `create_player_profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Read = 1,
    Create = 2,
    Change = 4,
    Delete = 8,
}

/// Stemmed action words by kind. Ambiguous ones ("book", "set", "post") are left out.
const ACTION_WORDS: &[(&str, Action)] = &[
    ("get", Action::Read),
    ("find", Action::Read),
    ("search", Action::Read),
    ("look", Action::Read),
    ("lookup", Action::Read),
    ("list", Action::Read),
    ("show", Action::Read),
    ("fetch", Action::Read),
    ("retriev", Action::Read),
    ("queri", Action::Read),
    ("view", Action::Read),
    ("display", Action::Read),
    ("read", Action::Read),
    ("locat", Action::Read),
    ("creat", Action::Create),
    ("add", Action::Create),
    ("make", Action::Create),
    ("insert", Action::Create),
    ("regist", Action::Create),
    ("reserv", Action::Create),
    ("submit", Action::Create),
    ("upload", Action::Create),
    ("updat", Action::Change),
    ("edit", Action::Change),
    ("modifi", Action::Change),
    ("chang", Action::Change),
    ("renam", Action::Change),
    ("delet", Action::Delete),
    ("remov", Action::Delete),
    ("cancel", Action::Delete),
    ("eras", Action::Delete),
];

/// The kind of action a stemmed word names, if it is an action word.
fn action_of(term: &str) -> Option<Action> {
    ACTION_WORDS
        .iter()
        .find(|(w, _)| *w == term)
        .map(|&(_, a)| a)
}

fn actions_of(terms: &[String]) -> u8 {
    terms
        .iter()
        .filter_map(|t| action_of(t))
        .fold(0, |bits, a| bits | a as u8)
}

/// How sure a ranking is of its first entry: its margin over the second, times the share of
/// the intent's word weight it matched.
fn confidence(order: &[Scored], matched_idf: &[f64], idf_total: f64) -> Confidence {
    let s1 = order.first().map_or(0.0, |s| s.score);
    let s2 = order.get(1).map_or(0.0, |s| s.score);
    if s1 <= 0.0 || idf_total <= 0.0 {
        return Confidence {
            value: 0.0,
            margin: 0.0,
            coverage: 0.0,
        };
    }
    let margin = ((s1 - s2) / s1).clamp(0.0, 1.0);
    let coverage = (matched_idf[order[0].index] / idf_total).clamp(0.0, 1.0);
    Confidence {
        value: margin * coverage,
        margin,
        coverage,
    }
}

/// Words for what the intent asks for or gives, which stop-word removal and literal values
/// hide: question words name the answer wanted ("when" wants a date, "where" a location),
/// and values name their own kind (`1970` is a year, `euros` a currency, `March 17` a date),
/// so an intent holding one reaches the tool whose parameter takes it.
fn answer_type_expansion(intent: &str) -> Vec<String> {
    let lower = intent.to_lowercase();
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    for token in lower.split_whitespace() {
        let token = token.trim_matches(|c: char| !c.is_alphanumeric());
        if is_numeric_date(token) {
            out.push("date");
            continue;
        }
        words.extend(token.split(|c: char| !c.is_alphanumeric()));
    }
    words.retain(|w| !w.is_empty());
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let prev = if i > 0 { words[i - 1] } else { "" };
        let in_date = |n: &str| is_month(n) || is_day_number(n);
        let add: &[&str] = match (*w, next) {
            ("when", _) => &["date", "time"],
            ("where", _) => &["location"],
            ("who", _) | ("whom", _) => &["person", "name"],
            ("how", "many") => &["number", "count"],
            ("how", "much") => &["amount", "cost", "price"],
            ("how", "long") => &["duration", "time"],
            ("how", "far") => &["distance"],
            // The year of a written-out date belongs to the date.
            _ if is_year(w) && !in_date(prev) && !in_date(next) => &["year"],
            _ if is_month(w) && (is_day_number(next) || is_day_number(prev) || is_year(next)) => {
                &["date"]
            }
            _ if is_currency(w) => &["currency"],
            _ if is_us_state(w, next) => &["state"],
            _ => unit_name(w.trim_start_matches(|c: char| c.is_ascii_digit())),
        };
        out.extend(add);
    }
    out.into_iter().map(text::stem).collect()
}

/// `2023-05-21`, `2023.10.2`, `09/09/2023`: three number groups, one of them a year.
fn is_numeric_date(token: &str) -> bool {
    let groups: Vec<&str> = token.split(['-', '.', '/']).collect();
    groups.len() == 3
        && groups
            .iter()
            .all(|g| !g.is_empty() && g.len() <= 4 && g.bytes().all(|b| b.is_ascii_digit()))
        && (is_year(groups[0]) || is_year(groups[2]))
}

/// `1871`, `2021`: a four-digit number a calendar would use.
fn is_year(word: &str) -> bool {
    word.len() == 4
        && word
            .parse::<u32>()
            .is_ok_and(|y| (1000..=2199).contains(&y))
}

/// `17`, `10th`, `1st`.
fn is_day_number(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    matches!(suffix, "" | "st" | "nd" | "rd" | "th")
        && digits.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d))
}

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

fn is_month(word: &str) -> bool {
    MONTHS.contains(&word)
}

/// Currency names and ISO codes people write in requests.
const CURRENCIES: &[&str] = &[
    "dollar", "dollars", "euro", "euros", "yen", "sterling", "rupee", "rupees", "yuan", "renminbi",
    "franc", "francs", "peso", "pesos", "krona", "krone", "kronor", "ruble", "rubles", "rouble",
    "lira", "reais", "dirham", "baht", "usd", "eur", "gbp", "jpy", "cad", "aud", "nzd", "chf",
    "cny", "inr", "mxn", "brl", "krw", "sek", "nok", "dkk", "rub", "zar", "sgd", "hkd",
];

fn is_currency(word: &str) -> bool {
    CURRENCIES.contains(&word)
}

/// US state names; the second word of a two-word name follows the first (`new` `mexico`).
const US_STATES: &[&str] = &[
    "alabama",
    "alaska",
    "arizona",
    "arkansas",
    "california",
    "colorado",
    "connecticut",
    "delaware",
    "florida",
    "georgia",
    "hawaii",
    "idaho",
    "illinois",
    "indiana",
    "iowa",
    "kansas",
    "kentucky",
    "louisiana",
    "maine",
    "maryland",
    "massachusetts",
    "michigan",
    "minnesota",
    "mississippi",
    "missouri",
    "montana",
    "nebraska",
    "nevada",
    "new hampshire",
    "new jersey",
    "new mexico",
    "north carolina",
    "north dakota",
    "ohio",
    "oklahoma",
    "oregon",
    "pennsylvania",
    "rhode island",
    "south carolina",
    "south dakota",
    "tennessee",
    "texas",
    "utah",
    "vermont",
    "virginia",
    "washington",
    "west virginia",
    "wisconsin",
    "wyoming",
];

fn is_us_state(word: &str, next: &str) -> bool {
    US_STATES.iter().any(|s| match s.split_once(' ') {
        Some((a, b)) => a == word && b == next,
        None => *s == word,
    })
}

/// The unit an abbreviation stands for (`cm` → centimeter), as parameter descriptions spell
/// it out ("height in centimeters").
fn unit_name(abbreviation: &str) -> &'static [&'static str] {
    match abbreviation {
        "mm" => &["millimeter"],
        "cm" => &["centimeter"],
        "km" => &["kilometer"],
        "kg" | "kgs" => &["kilogram"],
        "mg" => &["milligram"],
        "lb" | "lbs" => &["pound"],
        "oz" => &["ounce"],
        "ft" => &["feet", "foot"],
        "mi" => &["mile"],
        "mph" => &["mile", "hour"],
        "kph" | "kmh" => &["kilometer", "hour"],
        "ml" => &["milliliter"],
        "hr" | "hrs" => &["hour"],
        "mins" => &["minute"],
        "sec" | "secs" => &["second"],
        "ms" => &["millisecond"],
        "gb" => &["gigabyte"],
        "mb" => &["megabyte"],
        "kb" => &["kilobyte"],
        _ => &[],
    }
}

fn dedup_keep_order(terms: &mut Vec<String>) {
    let mut seen = HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
}

/// Should the two-pass LLM filter run? Only for rows that allow it, never on Tier A (which
/// sees the whole catalog), and only when the lexical ranking is unsure of itself.
pub fn should_escalate(row: &BudgetRow, confidence: &Confidence) -> bool {
    row.allows_llm_filter && row.tier != Tier::A && confidence.value < ESCALATE_BELOW
}

/// A plain word-overlap ranker, the baseline `eval rank` reports beside ours: the number of
/// distinct lower-cased words the intent shares with everything the entry says (its JSON:
/// name, description, schema). Ties keep catalog order.
pub struct WordOverlap {
    entries: Vec<HashSet<String>>,
}

impl WordOverlap {
    pub fn new(guide: &RoutingGuide) -> WordOverlap {
        let json = |v: serde_json::Result<String>| v.unwrap_or_default();
        WordOverlap {
            entries: guide
                .packs
                .iter()
                .map(|p| json(serde_json::to_string(p)))
                .chain(
                    guide
                        .pipelines
                        .iter()
                        .map(|p| json(serde_json::to_string(p))),
                )
                .map(|text| plain_words(&text))
                .collect(),
        }
    }

    /// Entry indices, best first.
    pub fn rank(&self, intent: &str) -> Vec<usize> {
        let q = plain_words(intent);
        let mut scored: Vec<(usize, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, words)| (i, q.iter().filter(|w| words.contains(*w)).count()))
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(i, _)| i).collect()
    }
}

fn plain_words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// One past plan, as the history prior sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PastPlan {
    pub intent: String,
    /// Tools (pack names or pipeline ids) the plan used.
    pub tools: Vec<String>,
    /// How it turned out: +1 followed, down to -1 failed/ignored (the history store decides).
    pub outcome: f64,
}

struct PriorPlan {
    terms: HashSet<String>,
    tools: Vec<String>,
    outcome: f64,
}

/// The boost the prior gives one tool for one intent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boost {
    /// -1..1: similarity-weighted mean outcome, scaled by the best similarity and shrunk
    /// towards 0 when few plans stand behind it (n / (n + 1)).
    pub strength: f64,
    pub outcome: f64,
    pub plans: usize,
}

/// Past plans for similar intents, turned into boosts for the tools they used.
pub struct HistoryPrior {
    plans: Vec<PriorPlan>,
}

impl HistoryPrior {
    pub fn new(plans: &[PastPlan]) -> HistoryPrior {
        HistoryPrior {
            plans: plans
                .iter()
                .map(|p| PriorPlan {
                    terms: text::terms(&p.intent).into_iter().collect(),
                    tools: p.tools.clone(),
                    outcome: p.outcome.clamp(-1.0, 1.0),
                })
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    /// Boosts per tool name for an intent's words.
    pub fn boosts(&self, query: &HashSet<&str>) -> HashMap<&str, Boost> {
        // tool → (Σ sim·outcome, Σ sim, max sim, plans)
        let mut acc: HashMap<&str, (f64, f64, f64, usize)> = HashMap::new();
        for plan in &self.plans {
            let sim = jaccard(query, &plan.terms);
            if sim < PRIOR_MIN_SIMILARITY {
                continue;
            }
            let mut seen = HashSet::new();
            for tool in plan.tools.iter().filter(|t| seen.insert(t.as_str())) {
                let e = acc.entry(tool.as_str()).or_insert((0.0, 0.0, 0.0, 0));
                e.0 += sim * plan.outcome;
                e.1 += sim;
                e.2 = f64::max(e.2, sim);
                e.3 += 1;
            }
        }
        acc.into_iter()
            .map(|(tool, (weighted, sims, best, plans))| {
                let outcome = weighted / sims;
                (
                    tool,
                    Boost {
                        // Shrunk by the evidence: one plan is an anecdote, many a pattern.
                        strength: outcome * best * plans as f64 / (plans as f64 + 1.0),
                        outcome,
                        plans,
                    },
                )
            })
            .collect()
    }
}

fn jaccard(a: &HashSet<&str>, b: &HashSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let inter = a.iter().filter(|t| b.contains(**t)).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{Pack, PackMetadata};

    fn pack(name: &str, description: &str) -> Pack {
        Pack {
            name: name.into(),
            description: description.into(),
            metadata: PackMetadata::default(),
        }
    }

    fn guide() -> RoutingGuide {
        RoutingGuide {
            packs: vec![
                pack("get_weather", "Get the current weather for a city."),
                pack(
                    "get_weather_forecast",
                    "Get a multi-day weather forecast for a city.",
                ),
                pack("todoAdd", "Add an item to the todo list."),
                pack(
                    "browser.screenshot",
                    "Capture a screenshot of the current page.",
                ),
                pack("memory.store", "Remember a note for later recall."),
            ],
            pipelines: vec![],
        }
    }

    #[test]
    fn identifiers_match_prose() {
        let g = guide();
        let idx = RankIndex::new(&g);
        let r = idx.rank("please add buy milk to my todo", None);
        assert_eq!(idx.name(r.order[0].index), "todoAdd");
        let r = idx.rank("take a screenshot of this page", None);
        assert_eq!(idx.name(r.order[0].index), "browser.screenshot");
        let r = idx.rank("what's the weather forecast in Paris for the week", None);
        assert_eq!(idx.name(r.order[0].index), "get_weather_forecast");
        let r = idx.rank("what's the weather in Paris right now", None);
        assert_eq!(idx.name(r.order[0].index), "get_weather");
    }

    #[test]
    fn enum_values_of_array_items_are_indexed() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"features": {
                "type": "array",
                "items": {"type": "string", "enum": ["timings", "accessibility"]},
            }},
        });
        let mut museum = pack("museum_info", "Information about a museum.");
        museum.metadata.input_schema = Some(Schema::Full(schema));
        let g = RoutingGuide {
            packs: vec![pack("museum_hours", "Information about a museum."), museum],
            pipelines: vec![],
        };
        let idx = RankIndex::new(&g);
        let r = idx.rank("museum information including accessibility", None);
        assert_eq!(idx.name(r.order[0].index), "museum_info");
        let why = idx.explain(&r, r.order[0].index, None);
        assert!(
            why.one_line().contains("accessibiliti·parameters"),
            "{}",
            why.one_line()
        );
    }

    #[test]
    fn every_score_explains_itself_and_adds_up() {
        let g = guide();
        let idx = RankIndex::new(&g);
        let r = idx.rank("remember this note", None);
        let top = r.order[0];
        let e = idx.explain(&r, top.index, None);
        assert_eq!(e.name, "memory.store");
        assert!((e.total() - top.score).abs() < 1e-9, "{e:?} vs {top:?}");
        assert!(e.matches.iter().any(|m| m.field == Field::Description));
        assert!(e.one_line().starts_with("memory.store"));
        // Every entry of a ranking explains exactly its score, prior included.
        let prior = HistoryPrior::new(&[PastPlan {
            intent: "remember this note for later".into(),
            tools: vec!["memory.store".into(), "todoAdd".into()],
            outcome: 1.0,
        }]);
        let r = idx.rank(
            "please remember adding the note to my todo list",
            Some(&prior),
        );
        for s in &r.order {
            let e = idx.explain(&r, s.index, Some(&prior));
            assert!((e.total() - s.score).abs() < 1e-9, "{}", e.one_line());
        }
    }

    #[test]
    fn related_words_values_and_actions_reach_the_right_entry() {
        let g = RoutingGuide {
            packs: vec![
                pack("lawyer.search", "Find lawyers by specialty."),
                pack("geodistance.find", "Distance between two cities."),
                pack(
                    "historical_contrib.get_contrib",
                    "A scientist's contributions.",
                ),
                pack(
                    "create_player_profile",
                    "Create a new profile for a player.",
                ),
                pack("sports_db.find_athlete", "A player's profile, by name."),
                pack(
                    "currency.convert",
                    "Convert an amount into another currency.",
                ),
                pack("population.by_year", "Population of a country in a year."),
                pack("weather.on_date", "Weather on a date."),
            ],
            pipelines: vec![],
        };
        let idx = RankIndex::new(&g);
        let first = |q: &str| idx.name(idx.rank(q, None).order[0].index).to_string();
        assert_eq!(first("divorce law specialists"), "lawyer.search");
        assert_eq!(
            first("how far: the distance from Paris to Rome"),
            "geodistance.find"
        );
        assert_eq!(
            first("Einstein's contribution to physics"),
            "historical_contrib.get_contrib"
        );
        assert_eq!(
            first("find me the profile of player Lebron James"),
            "sports_db.find_athlete"
        );
        assert_eq!(
            first("I have 100 euros, what is that in yen"),
            "currency.convert"
        );
        assert_eq!(
            first("how many people lived in France in 1954"),
            "population.by_year"
        );
        assert_eq!(
            first("what was it like in Paris on March 3"),
            "weather.on_date"
        );
        // The explanation names the word a related match went through.
        let r = idx.rank("divorce law specialists", None);
        let e = idx.explain(&r, 0, None);
        assert!(e.one_line().contains("law→lawyer"), "{}", e.one_line());
        // An action conflict shows as a factor.
        let r = idx.rank("find me the profile of player Lebron James", None);
        let e = idx.explain(&r, 3, None);
        assert!(
            e.action < 1.0 && e.one_line().contains("other action"),
            "{}",
            e.one_line()
        );
    }

    #[test]
    fn same_kind_of_action_and_operator_symbols_reach_their_tool() {
        let mut query_tool = pack("records.query", "Rows of a table.");
        query_tool.metadata.input_schema = Some(Schema::Full(serde_json::json!({
            "properties": {
                "operation": {"type": "string", "enum": ["<", ">", "="]}
            }
        })));
        let g = RoutingGuide {
            packs: vec![
                pack("measure_driving_distance", "Driving distance by road."),
                pack("get_driving_distance", "Driving distance by road."),
                pack("records.fetch", "Rows of a table."),
                query_tool,
            ],
            pipelines: vec![],
        };
        let idx = RankIndex::new(&g);
        // Same description: "find" reaches `get`, a read like itself, and nothing else.
        let r = idx.rank("find the driving distance", None);
        assert_eq!(idx.name(r.order[0].index), "get_driving_distance");
        let e = idx.explain(&r, r.order[0].index, None);
        assert!(e.one_line().contains("find→get·name"), "{}", e.one_line());
        let off = RankIndex::with_params(
            &g,
            RankParams {
                action_synonym: 0.0,
                ..RankParams::default()
            },
        );
        let r = off.rank("find the driving distance", None);
        assert_eq!(r.order[0].score, r.order[1].score, "a tie without synonyms");
        // `>` among enum values is "greater than".
        let r = idx.rank("rows of the table where age is greater than 25", None);
        assert_eq!(idx.name(r.order[0].index), "records.query");
    }

    #[test]
    fn values_name_their_kind() {
        let kinds = |q: &str| answer_type_expansion(q);
        assert_eq!(kinds("population in 1970"), vec!["year"]);
        assert_eq!(kinds("on 2023-05-21"), vec!["date"]);
        assert_eq!(kinds("on 09/09/2023 please"), vec!["date"]);
        // The year of a written date is part of the date, not a year of its own.
        assert_eq!(kinds("on March 7th 2023"), vec!["date"]);
        assert_eq!(kinds("the 10th march 2023"), vec!["date"]);
        assert_eq!(kinds("100 euros in USD"), vec![text::stem("currency"); 2]);
        assert_eq!(kinds("height of 180 cm"), vec![text::stem("centimeter")]);
        assert_eq!(kinds("may I march on"), Vec::<String>::new());
        assert_eq!(kinds("route 66"), Vec::<String>::new());
    }

    #[test]
    fn confidence_is_low_when_nothing_matches_and_high_on_a_clear_winner() {
        let g = guide();
        let idx = RankIndex::new(&g);
        let none = idx.rank("zebra quantum", None);
        assert_eq!(none.confidence.value, 0.0);
        // No match keeps catalog order.
        assert_eq!(none.indices(), vec![0, 1, 2, 3, 4]);
        let clear = idx.rank("screenshot", None);
        assert!(clear.confidence.value > 0.5, "{:?}", clear.confidence);
        let mut row = BudgetRow::fallback();
        assert!(should_escalate(&row, &none.confidence));
        assert!(!should_escalate(&row, &clear.confidence));
        row.allows_llm_filter = false;
        assert!(!should_escalate(&row, &none.confidence));
    }

    #[test]
    fn history_prior_lifts_followed_tools_and_sinks_failed_ones() {
        let g = guide();
        let idx = RankIndex::new(&g);
        let intent = "capture what is on the page";
        let before = idx.rank(intent, None);
        let followed = HistoryPrior::new(&[
            PastPlan {
                intent: "capture the page as a note".into(),
                tools: vec!["memory.store".into()],
                outcome: 1.0,
            },
            PastPlan {
                intent: "capture this page".into(),
                tools: vec!["memory.store".into()],
                outcome: 1.0,
            },
        ]);
        let after = idx.rank(intent, Some(&followed));
        let pos = |r: &Ranking| r.position_of(&idx, "memory.store").unwrap();
        assert!(
            pos(&after) < pos(&before),
            "{} vs {}",
            pos(&after),
            pos(&before)
        );
        let e = idx.explain(&after, 4, Some(&followed));
        assert_eq!(e.prior.as_ref().map(|p| p.plans), Some(2));

        let failed = HistoryPrior::new(&[PastPlan {
            intent: "capture what is on the page".into(),
            tools: vec!["browser.screenshot".into()],
            outcome: -1.0,
        }]);
        let sunk = idx.rank(intent, Some(&failed));
        let shot = |r: &Ranking| r.order.iter().find(|s| s.index == 3).unwrap().score;
        assert!(shot(&sunk) < shot(&before));
        // Dissimilar intents do nothing.
        let unrelated = HistoryPrior::new(&[PastPlan {
            intent: "book a flight to Rome".into(),
            tools: vec!["todoAdd".into()],
            outcome: 1.0,
        }]);
        assert_eq!(idx.rank(intent, Some(&unrelated)), before);
    }

    /// A catalog name or an intent of one 1 MB word (a run of one letter, a repeated word, a
    /// camelCase run): indexing and ranking read it once and still rank the rest.
    #[test]
    fn megabyte_words_index_and_rank_in_one_pass() {
        const MB: usize = 1_000_000;
        let runs = [
            "a".repeat(MB),
            "contribution".repeat(MB / 12),
            "aB".repeat(MB / 2),
        ];
        let mut g = guide();
        g.packs.extend(runs.iter().map(|r| pack(r, "A tool.")));
        let idx = RankIndex::new(&g);
        let r = idx.rank("what's the weather forecast in Paris for the week", None);
        assert_eq!(idx.name(r.order[0].index), "get_weather_forecast");
        for (k, run) in runs.iter().take(2).enumerate() {
            let r = idx.rank(run, None);
            assert_eq!(r.order[0].index, 5 + k, "run {k}");
            let e = idx.explain(&r, r.order[0].index, None);
            assert!((e.total() - r.order[0].score).abs() < 1e-9);
        }
    }

    #[test]
    fn words_past_the_length_limit_reach_no_related_words() {
        let long = "a".repeat(MAX_RELATED_LEN + 6);
        let g = RoutingGuide {
            packs: vec![pack("get_weather", "Weather."), pack(&long, "A tool.")],
            pipelines: vec![],
        };
        let idx = RankIndex::new(&g);
        // A word within the limit reaches the longer word it begins...
        let r = idx.rank(&"a".repeat(MAX_RELATED_LEN), None);
        assert_eq!(r.order[0].index, 1);
        assert!(r.order[0].score > 0.0);
        // ...one past it reaches nothing but itself.
        let r = idx.rank(&"a".repeat(MAX_RELATED_LEN + 1), None);
        assert_eq!(r.order[0].score, 0.0);
    }

    #[test]
    fn word_overlap_baseline_counts_shared_words() {
        let g = guide();
        let order = WordOverlap::new(&g).rank("add to the todo list");
        assert_eq!(order[0], 2);
    }
}
