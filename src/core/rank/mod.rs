//! Relevance ranking of catalog entries for an intent (DESIGN §2.5): field-weighted BM25
//! (BM25F) over split, stemmed words, a name-coverage term, per-request coverage for
//! questions that ask for several things, and the history prior — past plans for similar
//! intents, weighted by how they turned out. Every score explains itself.
//!
//! The parts: [`entry`] reads an entry into per-field words, [`index`] builds the inverted
//! index (and mines related words from the catalog itself), [`thesaurus`] holds everyday
//! words for one thing that no catalog teaches, [`query`] turns an intent into
//! words and requests, [`score`] ranks, [`explain`] says why, [`prior`] is the history,
//! [`baseline`] holds the plain rankers `eval rank` compares with.

mod actions;
mod baseline;
mod entry;
mod explain;
mod family;
mod index;
mod lookups;
mod prior;
mod query;
#[cfg(test)]
mod reference;
mod score;
mod semantic;
mod thesaurus;
mod values;

use serde::Serialize;

use crate::core::budget::{BudgetRow, Tier};

pub use baseline::{BM25_B, BM25_K1, Bm25, WordOverlap};
pub use explain::{Explanation, FamilyMatch, PriorMatch, RareWord, SemanticMatch, TermMatch};
pub use index::RankIndex;
pub use prior::{Boost, HistoryPrior, LearnedWords, PRIOR_INTENT_BYTES, PastPlan, prior_intent};
pub use query::{QUERY_MAX_BYTES, TermSource, split_requests};
pub use semantic::{
    EntryVectors, MAX_SENTENCE_BYTES, SEMANTIC_WEIGHT, cosine, entry_sentence, unit, vector_problem,
};

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
    /// Words of past intents whose followed plans used this tool (see [`LearnedWords`]);
    /// empty without a history.
    Learned,
}

pub(crate) const NF: usize = 10;

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
        Field::Learned,
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
            Field::Parameters => (0.3, 0.75),
            Field::Examples => (0.3, 0.75),
            Field::Learned => (1.0, 0.75),
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
            Field::Learned => "learned",
        }
    }
}

/// Words shorter than this reach no related words (`art` would reach `artist`, `article`).
const MIN_RELATED_LEN: usize = 4;
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
/// A question is read as at most this many requests (the rest join the last).
pub const MAX_REQUESTS: usize = 8;

/// The ranker's weights. Every one was chosen on the tune halves of the evaluation sets
/// (`cargo run --release --example rank_sweep`), never on their test halves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    /// (weight, b) per field, in [`Field::ALL`] order.
    pub fields: [(f64, f64); NF],
    /// BM25 saturation.
    pub k1: f64,
    /// Points for a name whose every word the intent mentions, scaled by those words' rarity.
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
    /// Share of a match another everyday word for the same thing earns ("taxi" → "cab";
    /// see [`thesaurus`]; 0 = off).
    pub thesaurus: f64,
    /// Words for what values are ("when" → date, `1970` → year).
    pub expand: bool,
    /// Share of a match such an implied word ("how many" → count) earns, beside a written
    /// one (1 = as written); below 1 it also makes the word less often rare for the floor.
    /// 0.5–0.6 measured +0.001 recall@5 and all@10 on the tune halves,
    /// three sets down among eight up, and the test halves read 0.001 / 0.003 lower: no
    /// better than noise, so it stays 1.
    pub inferred: f64,
    /// Share of a match a word earns that the question says only between quotes, as the
    /// value it gives ("search for 'the history of kites'"; 1 = as written). 0.5 measured
    /// +0.0005 recall@5, +0.0006 all@10 on the tune halves, five sets up and none down; 0
    /// lost 0.005 all@10 (a quoted value is often the only word for its tool).
    pub quoted: f64,
    /// Share of the best score among an entry's family (the service its name opens with,
    /// `LocalBusinessData…`) that each other scored entry of the family gets (0 = off).
    /// 0.1 measured +0.0015 recall@5 on the tune halves (NESTFUL executable 0.853 → 0.882,
    /// live_multiple and its three-request compositions +0.002), all@10 −0.0001 (one set,
    /// live_multiple×2, −0.003); 0.2 and over lost all@10.
    pub family: f64,
    /// Read a question as its requests: coverage is the best request's, not the whole
    /// question's (false = the whole question is one request).
    pub requests: bool,
    /// How many rounds of request winners go first: 1 puts the best entry of every request
    /// before any second (0 = score order only).
    pub diversify: usize,
    /// An entry's lexical score never falls below this share of the plain BM25 points it
    /// earns from rare query words it says itself (0 = off): coverage and action factors must
    /// not bury the one entry that has the question's rarest word.
    pub rare_floor: f64,
    /// Share of plain BM25 (one field, every word of the entry) added to the score: the
    /// baseline's view of the entry, which no field weight can hide.
    pub plain_bm25: f64,
    /// A query word is rare when its IDF is at least this share of the catalog's highest.
    pub rare_idf: f64,
    /// Share of a match a word related through the catalog itself earns (a description word
    /// that entries name themselves with; 0 = off).
    pub mined: f64,
    /// A mined relation needs at least this many entries saying both words.
    pub mined_min_count: usize,
    /// The entries that feed an identifier input of each of the first this-many entries
    /// (`Get_Artist_ID_By_Name` for `List_Artist_Albums`'s `artistId`) are placed right after
    /// it, or after the request winners (0 = off).
    pub lookups: usize,
    /// A request's pick after the first round goes ahead only when its request score is at
    /// least this share of the request's first winner's (0 = every round places one).
    pub second_share: f64,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            fields: Field::ALL.map(Field::weight_and_b),
            k1: 1.2,
            name_coverage: 1.2,
            coord: 0.5,
            pair: 1.0,
            related: 0.5,
            action_synonym: 0.2,
            thesaurus: 0.7,
            action_conflict: 0.5,
            expand: true,
            inferred: 1.0,
            quoted: 0.5,
            family: 0.1,
            requests: true,
            diversify: 2,
            rare_floor: 0.5,
            plain_bm25: 0.0,
            rare_idf: 0.6,
            mined: 0.2,
            mined_min_count: 2,
            lookups: 2,
            second_share: 0.5,
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
    /// Set when the entry was placed ahead of higher scores as the best entry for one of
    /// the question's requests (0-based), so every request has an answer near the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_for_request: Option<usize>,
    /// Points from the semantic layer ([`RankIndex::rank_semantic`]; 0 when it is off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub semantic: f64,
    /// Set when the entry was placed ahead of higher scores as a lookup step of this entry
    /// (its index): it gives one of that entry's identifier inputs (see
    /// [`RankParams::lookups`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_for: Option<usize>,
    /// Points lent by the best other scored entry of its family (see [`RankParams::family`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub family: f64,
    /// That entry (its index), when it lent any.
    #[serde(skip)]
    pub family_from: Option<usize>,
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
    /// Share of the intent's word weight (IDF) that the first entry matches (of its best
    /// request's, when the question asks for several things).
    pub coverage: f64,
}

/// A catalog ranked for one intent, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    pub terms: Vec<String>,
    /// The requests the question was read as, when more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    /// Adjacent pairs of the written words, for explaining.
    #[serde(skip)]
    pub pairs: Vec<(String, String)>,
    /// Per term, the requests it belongs to (bit per request).
    #[serde(skip)]
    pub term_requests: Vec<u32>,
    /// Per term, how the question says it (written, quoted, implied: "how many" → count).
    #[serde(skip)]
    pub term_sources: Vec<TermSource>,
    pub order: Vec<Scored>,
    /// The first `head.len()` entries of `order` were placed there as their requests' best
    /// entries, round by round (empty when the question is one request). A caller that
    /// adds points of its own (an attachment's outline) keeps them first.
    #[serde(skip)]
    pub head: Vec<Placement>,
    pub confidence: Confidence,
    /// Points a similarity of 1 earns when the semantic layer is on ([`RankIndex::rank_semantic`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_scale: Option<f64>,
}

/// Why an entry of a ranking's head is there: the round of request winners it was placed
/// in and the request (0-based) it is the best entry for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub round: usize,
    pub request: usize,
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
            .position(|s| index.name(s.index) == name)
            .map(|p| p + 1)
    }
}

/// Which request winners are worth marking (`[placed first for request 2 …]`): those that
/// stand ahead of a higher score — any entry after them, another winner or not (tester 26
/// N3: only a higher score among the entries after every winner counted, so a first-round
/// winner ahead of a higher-scoring second pick read unmarked, as if the pick had been put
/// down for nothing). `head`: the winners' scores in the order placed; `top_rest`: the best
/// score after them.
pub fn placed_ahead_of_higher(head: &[f64], top_rest: f64) -> Vec<bool> {
    let mut later = top_rest;
    let mut ahead = vec![false; head.len()];
    for (k, &score) in head.iter().enumerate().rev() {
        ahead[k] = score < later;
        later = later.max(score);
    }
    ahead
}

/// Should the two-pass LLM filter run? Only for rows that allow it, never on Tier A (which
/// sees the whole catalog), and only when the lexical ranking is unsure of itself.
pub fn should_escalate(row: &BudgetRow, confidence: &Confidence) -> bool {
    row.allows_llm_filter && row.tier != Tier::A && confidence.value < ESCALATE_BELOW
}

#[cfg(test)]
mod tests;
