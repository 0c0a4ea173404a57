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
}

const NF: usize = 8;

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
        }
    }
}

/// BM25 saturation.
const K1: f64 = 1.2;
/// Points for a name whose every word the intent mentions, scaled by those words' rarity.
const NAME_COVERAGE_WEIGHT: f64 = 0.6;
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
    name_terms: Vec<Vec<String>>,
    /// Adjacent word pairs of each entry's name and description.
    pairs: Vec<HashSet<(String, String)>>,
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

/// Why an entry scored what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub name: String,
    pub score: f64,
    pub matches: Vec<TermMatch>,
    pub name_coverage: f64,
    pub prior: Option<PriorMatch>,
}

impl Explanation {
    /// `memory.store 7.31 = remember·name 3.10 + note·description 1.02 + prior +0.80 (3 plans)`
    pub fn one_line(&self) -> String {
        let mut parts: Vec<String> = self
            .matches
            .iter()
            .map(|m| format!("{}·{} {:.2}", m.term, m.field.label(), m.points))
            .collect();
        if self.name_coverage > 0.0 {
            parts.push(format!("name coverage {:.2}", self.name_coverage));
        }
        if let Some(p) = &self.prior {
            parts.push(format!("prior {:+.2} ({} plans)", p.points, p.plans));
        }
        if parts.is_empty() {
            parts.push("no match".into());
        }
        format!("{} {:.2} = {}", self.name, self.score, parts.join(" + "))
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
        schema_text(s, &mut |is_name, t| {
            let field = if is_name {
                Field::ParameterNames
            } else {
                Field::Parameters
            };
            add(field, t)
        });
    }
    f
}

/// Property names (`true`), and their descriptions and enum values (`false`) of a schema, a
/// few levels deep.
fn schema_text(schema: &Schema, f: &mut dyn FnMut(bool, &str)) {
    match schema {
        Schema::Fields(names) => names.iter().for_each(|n| f(true, n)),
        Schema::Full(v) => walk_schema(v, f, 0),
    }
}

fn walk_schema(v: &Value, f: &mut dyn FnMut(bool, &str), depth: usize) {
    if depth > 3 {
        return;
    }
    let Some(props) = v.get("properties").and_then(Value::as_object) else {
        if let Some(items) = v.get("items") {
            walk_schema(items, f, depth + 1);
        }
        return;
    };
    for (name, prop) in props {
        f(true, name);
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            f(false, d);
        }
        if let Some(values) = prop.get("enum").and_then(Value::as_array) {
            values
                .iter()
                .filter_map(Value::as_str)
                .for_each(|v| f(false, v));
        }
        walk_schema(prop, f, depth + 1);
    }
}

fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

impl RankIndex {
    pub fn new(guide: &RoutingGuide) -> RankIndex {
        let n = guide.entry_count();
        let mut postings: HashMap<String, Vec<Posting>> = HashMap::new();
        let mut lens = Vec::with_capacity(n);
        let mut name_terms = Vec::with_capacity(n);
        let mut pairs = Vec::with_capacity(n);
        let mut totals = [0f64; NF];
        for i in 0..n {
            let fields = entry_fields(guide, i);
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
            let mut names = fields[Field::Name as usize].clone();
            names.sort();
            names.dedup();
            name_terms.push(names);
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
        RankIndex {
            names,
            postings,
            lens,
            avg_len,
            name_terms,
            pairs,
            params: RankParams::default(),
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

    fn term_points(idf: f64, combined_tf: f64, k1: f64) -> f64 {
        idf * combined_tf * (k1 + 1.0) / (combined_tf + k1)
    }

    /// Name coverage: the IDF share of the entry's name words that the intent contains.
    fn name_coverage(&self, doc: usize, query: &HashSet<&str>) -> f64 {
        let names = &self.name_terms[doc];
        if !names.iter().any(|t| query.contains(t.as_str())) {
            return 0.0;
        }
        let total: f64 = names.iter().map(|t| self.idf(t)).sum();
        if total == 0.0 {
            return 0.0;
        }
        let hit: f64 = names
            .iter()
            .filter(|t| query.contains(t.as_str()))
            .map(|t| self.idf(t))
            .sum();
        hit / total
    }

    /// Rank every entry for `intent`. Ties keep catalog order.
    pub fn rank(&self, intent: &str, prior: Option<&HistoryPrior>) -> Ranking {
        let words = text::terms(intent);
        // Adjacent pairs of what was written (not of the expansion below).
        let query_pairs: Vec<(String, String)> = words
            .windows(2)
            .map(|w| (w[0].clone(), w[1].clone()))
            .collect();
        let mut terms = words;
        if self.params.expand {
            terms.extend(question_word_expansion(intent));
        }
        dedup_keep_order(&mut terms);
        let query: HashSet<&str> = terms.iter().map(String::as_str).collect();
        let n = self.len();
        let mut lexical = vec![0f64; n];
        let mut matched_idf = vec![0f64; n];
        let mut touched: Vec<usize> = Vec::new();
        let mut query_idf_total = 0.0;
        let mut term_idfs: Vec<f64> = Vec::with_capacity(terms.len());
        for t in &terms {
            let idf = self.idf(t);
            term_idfs.push(idf);
            query_idf_total += idf;
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            for p in list {
                let combined: f64 = self.field_tf(p).iter().sum();
                let d = p.doc as usize;
                if lexical[d] == 0.0 {
                    touched.push(d);
                }
                lexical[d] += Self::term_points(idf, combined, self.params.k1);
                matched_idf[d] += idf;
            }
        }
        for &d in &touched {
            if self.params.pair > 0.0 {
                let hits = query_pairs
                    .iter()
                    .filter(|p| self.pairs[d].contains(*p))
                    .count();
                lexical[d] += self.params.pair * hits as f64;
            }
            if self.params.coord > 0.0 && query_idf_total > 0.0 {
                lexical[d] *= (matched_idf[d] / query_idf_total).powf(self.params.coord);
            }
            let cov = self.name_coverage(d, &query);
            if cov == 0.0 {
                continue;
            }
            let max_name_idf = self.name_terms[d]
                .iter()
                .map(|t| self.idf(t))
                .fold(0.0, f64::max);
            lexical[d] += self.params.name_coverage * cov * cov * max_name_idf;
        }
        let best_lexical = touched.iter().map(|&d| lexical[d]).fold(0.0, f64::max);
        let boosts = prior.map(|p| p.boosts(&query)).unwrap_or_default();
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
                }
            })
            .collect();
        order.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        let confidence = self.confidence(&order, &terms, &term_idfs, query_idf_total);
        Ranking {
            terms,
            order,
            confidence,
        }
    }

    fn confidence(
        &self,
        order: &[Scored],
        terms: &[String],
        term_idfs: &[f64],
        query_idf_total: f64,
    ) -> Confidence {
        let s1 = order.first().map_or(0.0, |s| s.score);
        let s2 = order.get(1).map_or(0.0, |s| s.score);
        if s1 <= 0.0 || query_idf_total <= 0.0 {
            return Confidence {
                value: 0.0,
                margin: 0.0,
                coverage: 0.0,
            };
        }
        let top = order[0].index;
        let matched: f64 = terms
            .iter()
            .zip(term_idfs)
            .filter(|(t, _)| {
                self.postings
                    .get(t.as_str())
                    .is_some_and(|l| l.iter().any(|p| p.doc as usize == top))
            })
            .map(|(_, idf)| idf)
            .sum();
        let margin = ((s1 - s2) / s1).clamp(0.0, 1.0);
        let coverage = (matched / query_idf_total).clamp(0.0, 1.0);
        Confidence {
            value: margin * coverage,
            margin,
            coverage,
        }
    }

    /// Why entry `index` scored what it did in `ranking`.
    pub fn explain(
        &self,
        ranking: &Ranking,
        index: usize,
        prior: Option<&HistoryPrior>,
    ) -> Explanation {
        let query: HashSet<&str> = ranking.terms.iter().map(String::as_str).collect();
        let mut matches = Vec::new();
        for t in &ranking.terms {
            let Some(p) = self
                .postings
                .get(t)
                .and_then(|l| l.iter().find(|p| p.doc as usize == index))
            else {
                continue;
            };
            let ftf = self.field_tf(p);
            let combined: f64 = ftf.iter().sum();
            let points = Self::term_points(self.idf(t), combined, self.params.k1);
            for (f, part) in ftf.iter().enumerate() {
                if *part > 0.0 {
                    matches.push(TermMatch {
                        term: t.clone(),
                        field: Field::ALL[f],
                        points: points * part / combined,
                    });
                }
            }
        }
        matches.sort_by(|a, b| b.points.total_cmp(&a.points));
        let scored = ranking.order.iter().find(|s| s.index == index);
        let prior_match = match (prior, scored) {
            (Some(p), Some(s)) if s.prior != 0.0 => p
                .boosts(&query)
                .get(self.names[index].as_str())
                .map(|b| PriorMatch {
                    plans: b.plans,
                    outcome: b.outcome,
                    points: s.prior,
                }),
            _ => None,
        };
        Explanation {
            name: self.names[index].clone(),
            score: scored.map_or(0.0, |s| s.score),
            matches,
            name_coverage: if scored.is_some_and(|s| s.lexical > 0.0) {
                self.name_coverage(index, &query)
            } else {
                0.0
            },
            prior: prior_match,
        }
    }
}

/// Question words name what kind of answer is wanted: "when" wants a date, "where" a
/// location, "who" a person. Stop-word removal would drop them; these stand in.
fn question_word_expansion(intent: &str) -> Vec<String> {
    let lower = intent.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let add: &[&str] = match (*w, next) {
            ("when", _) => &["date", "time"],
            ("where", _) => &["location"],
            ("who", _) | ("whom", _) => &["person", "name"],
            ("how", "many") => &["number", "count"],
            ("how", "much") => &["amount", "cost", "price"],
            ("how", "long") => &["duration", "time"],
            ("how", "far") => &["distance"],
            _ => &[],
        };
        out.extend(add.iter().map(|a| text::stem(a)));
    }
    out
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
    fn every_score_explains_itself_and_adds_up() {
        let g = guide();
        let idx = RankIndex::new(&g);
        let r = idx.rank("remember this note", None);
        let top = r.order[0];
        let e = idx.explain(&r, top.index, None);
        assert_eq!(e.name, "memory.store");
        let terms: f64 = e.matches.iter().map(|m| m.points).sum();
        assert!(terms > 0.0 && terms <= top.lexical + 1e-9);
        assert!(e.matches.iter().any(|m| m.field == Field::Description));
        assert!(e.one_line().starts_with("memory.store"));
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

    #[test]
    fn word_overlap_baseline_counts_shared_words() {
        let g = guide();
        let order = WordOverlap::new(&g).rank("add to the todo list");
        assert_eq!(order[0], 2);
    }
}
