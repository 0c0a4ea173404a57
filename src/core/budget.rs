//! Per-model budgets: the row model, lookup, layering and lint (DESIGN §2.1).
//!
//! Pure: rows come in as values or TOML text, never from a file here.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use crate::core::bounds::{self, finite_in, int_in};
use crate::core::error::CoreError;
use crate::core::terminal_text::{quoted, quoted_with};

/// Structured-output reliability under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    A,
    B,
    C,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::A, Tier::B, Tier::C];

    /// Catalog byte cap a tier gets when its row names none.
    pub fn default_catalog_bytes(self) -> Option<usize> {
        match self {
            Tier::A => None,
            Tier::B => Some(22_000),
            Tier::C => Some(10_000),
        }
    }

    pub fn default_prompt_variant(self) -> PromptVariant {
        match self {
            Tier::A | Tier::B => PromptVariant::FullSteps,
            Tier::C => PromptVariant::SinglePick,
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tier::A => "A",
            Tier::B => "B",
            Tier::C => "C",
        })
    }
}

impl FromStr for Tier {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "A" => Ok(Tier::A),
            "B" => Ok(Tier::B),
            "C" => Ok(Tier::C),
            _ => Err(CoreError::UnknownTier(s.to_string())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    Exact,
    Prefix,
}

/// Which tokenizer counts this model's tokens; `Estimate` is `core::tokens::estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    O200k,
    Cl100k,
    #[default]
    Estimate,
}

impl Tokenizer {
    /// Guess from a model id: OpenAI families have public BPEs; everything else is estimated.
    pub fn for_model_id(id: &str) -> Tokenizer {
        let base = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
        let o200k = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "o1",
            "o3",
            "o4",
            "gpt-oss",
            "chatgpt-4o",
        ];
        let cl100k = ["gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada"];
        if o200k.iter().any(|p| base.starts_with(p)) {
            Tokenizer::O200k
        } else if cl100k.iter().any(|p| base.starts_with(p)) {
            Tokenizer::Cl100k
        } else {
            Tokenizer::Estimate
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Cl100k => "cl100k",
            Tokenizer::Estimate => "estimate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptVariant {
    FullSteps,
    SinglePick,
}

impl PromptVariant {
    /// How screens and text output name it (the serde name, in words).
    pub fn label(self) -> &'static str {
        match self {
            PromptVariant::FullSteps => "full steps",
            PromptVariant::SinglePick => "single pick",
        }
    }
}

impl fmt::Display for PromptVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Where a row came from. Later layers win over earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Sample,
    Registry,
    User,
    Fallback,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Sample => "sample",
            Layer::Registry => "registry",
            Layer::User => "user",
            Layer::Fallback => "fallback",
        })
    }
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub cached_input: f64,
    #[serde(default)]
    pub output: f64,
}

impl Prices {
    /// The price a cached prompt token is charged at: the row's cached-input price, or with
    /// none the input price (a provider without a cache discount charges them in full;
    /// tester 35 F13). The kept cost of a call and the preview's cached estimate both use it.
    pub fn cached_charge(&self) -> f64 {
        if self.cached_input == 0.0 {
            self.input
        } else {
            self.cached_input
        }
    }
}

/// One model's budget and capabilities.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetRow {
    pub id: String,
    #[serde(rename = "match")]
    pub match_kind: MatchKind,
    pub input_tokens: usize,
    pub output_tokens: usize,
    pub tier: Tier,
    /// Effective cap in bytes: the row's own, or its tier's default.
    pub max_catalog_bytes: Option<usize>,
    pub allows_llm_filter: bool,
    pub filter_model: Option<String>,
    pub hybrid_reasoning: bool,
    pub strict_json: bool,
    pub prefix_cache: bool,
    pub prices: Prices,
    pub prompt_cache_min_tokens: Option<usize>,
    pub tokenizer: Tokenizer,
    pub prompt_variant: PromptVariant,
    pub layer: Layer,
    pub source: String,
    /// True when the tier was derived by rule rather than stated by a person.
    pub tier_derived: bool,
    pub lint: Vec<String>,
    /// The row named its own byte cap, so a tier override keeps it.
    #[serde(skip)]
    pub explicit_catalog_cap: bool,
    /// Sampling sent with every call on this row; unset fields are not sent.
    pub sampling: Sampling,
    /// `max_tokens` sent instead of `output_tokens` (which stays the output reserved in
    /// the window).
    pub max_tokens: Option<usize>,
}

/// Per-model sampling from a `budgets.toml` row: sent with the request, shown in the
/// preview, stored with the plan. `None` leaves the provider's default and is not sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

impl Sampling {
    /// `temperature 0.2, seed 7, stop ["\n\n"]`, or `provider defaults`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.temperature {
            parts.push(format!("temperature {t}"));
        }
        if let Some(p) = self.top_p {
            parts.push(format!("top_p {p}"));
        }
        if let Some(s) = self.seed {
            parts.push(format!("seed {s}"));
        }
        if let Some(stop) = &self.stop {
            parts.push(format!("stop {stop:?}"));
        }
        if parts.is_empty() {
            "provider defaults".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// A row's id as every view names it: a prefix row (a family) ends in `*`, so `tencent/`
/// never reads as a model or a cut-off id (tester 50 F15: `preview` said `row tencent/` where
/// the Budgets table and `budgets` say `tencent/*`).
pub fn shown_row_id(id: &str, kind: MatchKind) -> String {
    match kind {
        MatchKind::Prefix if !id.ends_with('*') => format!("{id}*"),
        _ => id.to_string(),
    }
}

impl BudgetRow {
    /// [`shown_row_id`] of this row.
    pub fn shown_id(&self) -> String {
        shown_row_id(&self.id, self.match_kind)
    }

    /// The Tier C profile unknown models get (DESIGN §2.1): never fail on a fresh id.
    pub fn fallback() -> BudgetRow {
        BudgetRow {
            id: "*".to_string(),
            match_kind: MatchKind::Prefix,
            input_tokens: 16_000,
            output_tokens: 1_500,
            tier: Tier::C,
            max_catalog_bytes: Some(10_000),
            allows_llm_filter: true,
            filter_model: None,
            hybrid_reasoning: false,
            strict_json: false,
            prefix_cache: false,
            prices: Prices::default(),
            prompt_cache_min_tokens: None,
            tokenizer: Tokenizer::Estimate,
            prompt_variant: PromptVariant::SinglePick,
            layer: Layer::Fallback,
            source: "built-in fallback: unknown models get a conservative Tier C profile".into(),
            tier_derived: false,
            lint: Vec::new(),
            // Its 10,000 bytes are Tier C's default, so an override to another tier moves it.
            explicit_catalog_cap: false,
            sampling: Sampling::default(),
            max_tokens: None,
        }
    }

    /// Capability letters: R hybrid reasoning, J strict JSON, P prefix cache, F two-pass filter.
    pub fn flags(&self) -> String {
        [
            (self.hybrid_reasoning, 'R'),
            (self.strict_json, 'J'),
            (self.prefix_cache, 'P'),
            (self.allows_llm_filter, 'F'),
        ]
        .iter()
        .map(|&(on, c)| if on { c } else { '-' })
        .collect()
    }

    /// "free", or input/cached/output in USD per million tokens.
    pub fn price_label(&self) -> String {
        if self.prices.input == 0.0 && self.prices.output == 0.0 {
            return "free".into();
        }
        format!(
            "{}/{}/{}",
            self.prices.input, self.prices.cached_input, self.prices.output
        )
    }

    /// The same row with another tier, as an operator's override would give it:
    /// the tier's defaults for byte cap and prompt variant apply unless the row set them.
    pub fn with_tier(&self, tier: Tier) -> BudgetRow {
        let mut row = self.clone();
        if row.tier != tier {
            row.tier = tier;
            if !row.explicit_catalog_cap {
                row.max_catalog_bytes = tier.default_catalog_bytes();
            }
            row.prompt_variant = tier.default_prompt_variant();
        }
        row
    }
}

/// How a lookup resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchedBy {
    Exact,
    Prefix,
    Fallback,
}

#[derive(Debug, Clone)]
pub struct Resolved<'a> {
    pub row: &'a BudgetRow,
    pub matched_by: MatchedBy,
    /// What a layer said when it left out an entry under this very id (see
    /// [`BudgetTable::note_left_out`]), unless an exact row above the registry answers.
    pub notes: &'a [String],
}

/// A row as written in a `budgets.toml` (or the sample table): optional fields take
/// tier defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    pub id: String,
    #[serde(rename = "match", default = "default_match")]
    pub match_kind: MatchKind,
    #[serde(deserialize_with = "input_tokens_of")]
    pub input_tokens: usize,
    #[serde(deserialize_with = "output_tokens_of")]
    pub output_tokens: usize,
    pub tier: Tier,
    #[serde(default, deserialize_with = "max_catalog_bytes_of")]
    pub max_catalog_bytes: Option<usize>,
    #[serde(default)]
    pub allows_llm_filter: Option<bool>,
    pub filter_model: Option<String>,
    #[serde(default)]
    pub hybrid_reasoning: bool,
    #[serde(default)]
    pub strict_json: bool,
    #[serde(default)]
    pub prefix_cache: bool,
    #[serde(default)]
    pub prices: Prices,
    #[serde(default, deserialize_with = "prompt_cache_min_tokens_of")]
    pub prompt_cache_min_tokens: Option<usize>,
    pub tokenizer: Option<Tokenizer>,
    pub prompt_variant: Option<PromptVariant>,
    #[serde(default)]
    pub source: Option<String>,
    /// Sampling for this model (see [`Sampling`]).
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default, deserialize_with = "seed_of")]
    pub seed: Option<i64>,
    #[serde(default)]
    pub stop: Option<Vec<String>>,
    /// What is sent as `max_tokens` when it should differ from `output_tokens`.
    #[serde(default, deserialize_with = "max_tokens_of")]
    pub max_tokens: Option<usize>,
}

/// `input_tokens` read against its bound as the file is read, so every wrong value says the
/// one bound (tester 9 T9-12: `-1` read "of 0 or more", `99999999999` "from 0 to 100000000").
fn input_tokens_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    bounds::whole_number(d, &bounds::TOKENS, "input_tokens")
}

/// As [`input_tokens_of`], for `output_tokens`.
fn output_tokens_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    bounds::whole_number(d, &bounds::TOKENS, "output_tokens")
}

/// As [`input_tokens_of`], for the row's other whole numbers.
fn max_catalog_bytes_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    bounds::whole_number(d, &bounds::CATALOG_BYTES, "max_catalog_bytes").map(Some)
}

fn prompt_cache_min_tokens_of<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<usize>, D::Error> {
    bounds::whole_number(d, &bounds::TOKENS, "prompt_cache_min_tokens").map(Some)
}

fn seed_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    bounds::whole_number(d, &bounds::SEED, "seed").map(Some)
}

fn max_tokens_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    bounds::whole_number(d, &bounds::MAX_TOKENS, "max_tokens").map(Some)
}

fn default_match() -> MatchKind {
    MatchKind::Exact
}

impl RowSpec {
    /// Every number finite and in its range ([`crate::core::bounds`]); the error names
    /// `origin` and the field as `model["id"].prices.input`.
    pub fn check(&self, origin: &str) -> Result<(), CoreError> {
        let id = quoted_with(&self.id, '"');
        let field = |name: &str| format!("model[{id}].{name}");
        int_in(
            self.input_tokens,
            &bounds::TOKENS,
            origin,
            &field("input_tokens"),
        )?;
        int_in(
            self.output_tokens,
            &bounds::TOKENS,
            origin,
            &field("output_tokens"),
        )?;
        if let Some(n) = self.max_catalog_bytes {
            int_in(
                n,
                &bounds::CATALOG_BYTES,
                origin,
                &field("max_catalog_bytes"),
            )?;
        }
        if let Some(n) = self.prompt_cache_min_tokens {
            int_in(
                n,
                &bounds::TOKENS,
                origin,
                &field("prompt_cache_min_tokens"),
            )?;
        }
        for (name, price) in [
            ("prices.input", self.prices.input),
            ("prices.cached_input", self.prices.cached_input),
            ("prices.output", self.prices.output),
        ] {
            finite_in(price, &bounds::PRICE_PER_MILLION, origin, &field(name))?;
        }
        if let Some(t) = self.temperature {
            finite_in(t, &bounds::TEMPERATURE, origin, &field("temperature"))?;
        }
        if let Some(p) = self.top_p {
            finite_in(p, &bounds::TOP_P, origin, &field("top_p"))?;
        }
        if let Some(s) = self.seed {
            int_in(s, &bounds::SEED, origin, &field("seed"))?;
        }
        if let Some(stop) = &self.stop {
            int_in(stop.len(), &bounds::STOP_SEQUENCES, origin, &field("stop"))?;
            for (i, s) in stop.iter().enumerate() {
                int_in(
                    s.len(),
                    &bounds::STOP_BYTES,
                    origin,
                    &field(&format!("stop[{i}] (bytes)")),
                )?;
            }
        }
        if let Some(n) = self.max_tokens {
            int_in(n, &bounds::MAX_TOKENS, origin, &field("max_tokens"))?;
        }
        Ok(())
    }

    pub fn into_row(self, layer: Layer) -> BudgetRow {
        let tier = self.tier;
        let mut row = BudgetRow {
            tokenizer: self
                .tokenizer
                .unwrap_or_else(|| Tokenizer::for_model_id(&self.id)),
            id: self.id,
            match_kind: self.match_kind,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            tier,
            max_catalog_bytes: match self.max_catalog_bytes {
                // 0 written by a person means "no cap" even on a tier that has one.
                Some(0) => None,
                Some(n) => Some(n),
                None => tier.default_catalog_bytes(),
            },
            // Weak models get the two-pass filter by default; frontier ones don't need it.
            allows_llm_filter: self.allows_llm_filter.unwrap_or(tier != Tier::A),
            filter_model: self.filter_model,
            hybrid_reasoning: self.hybrid_reasoning,
            strict_json: self.strict_json,
            prefix_cache: self.prefix_cache,
            prices: self.prices,
            prompt_cache_min_tokens: self.prompt_cache_min_tokens,
            prompt_variant: self.prompt_variant.unwrap_or(tier.default_prompt_variant()),
            layer,
            source: self.source.unwrap_or_else(|| format!("{layer} table")),
            tier_derived: false,
            lint: Vec::new(),
            explicit_catalog_cap: self.max_catalog_bytes.is_some(),
            sampling: Sampling {
                temperature: self.temperature,
                top_p: self.top_p,
                seed: self.seed,
                stop: self.stop,
            },
            max_tokens: self.max_tokens,
        };
        row.lint = lint_row(&row);
        row
    }
}

/// The TOML file shape: `[fallback]` optional, then `[[model]]` rows.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    #[serde(default)]
    model: Vec<RowSpec>,
}

/// Parse a budgets TOML text. `origin` names the file in errors.
pub fn parse_budgets_toml(
    text: &str,
    origin: &str,
    layer: Layer,
) -> Result<Vec<BudgetRow>, CoreError> {
    let file: BudgetFile = toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
    let mut rows: Vec<BudgetRow> = Vec::with_capacity(file.model.len());
    // Each row's place by id and match kind, so a repeat is found in one look.
    let mut seen: HashMap<(String, MatchKind), usize> = HashMap::new();
    for (n, spec) in file.model.into_iter().enumerate() {
        if let Some(problem) = model_id_problem(&spec.id) {
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: format!("model[{n}].id"),
                problem: problem.into(),
            });
        }
        spec.check(origin)?;
        let row = spec.into_row(layer);
        if row.match_kind == MatchKind::Exact
            && let Some(prefix) = starred_exact_id(&row.id)
        {
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: format!("model[{n}].id"),
                problem: format!(
                    "{} ends in '*' but the row matches exactly: for every id starting \
                     {}, write id = {} and match = \"prefix\"",
                    quoted(&row.id),
                    quoted(prefix),
                    quoted_with(prefix, '"')
                ),
            });
        }
        // Within one file a second row for the same id would silently replace the first;
        // one for an id that prints alike (composed and decomposed, a no-break space) would
        // be a second row the table shows as the same model (tester 18 F2).
        let key = (crate::core::text::printed_alike(&row.id), row.match_kind);
        if let Some(&k) = seen.get(&key) {
            let first = &rows[k].id;
            let problem = if *first == row.id {
                format!(
                    "{} is also the id of model[{k}]: a file gives a model one row",
                    quoted(&row.id)
                )
            } else {
                format!(
                    "{} prints like model[{k}]'s id {} (spelled {} and {}): a file gives a \
                     model one row, and the table could not show which is which",
                    quoted(&row.id),
                    quoted(first),
                    crate::core::text::spelled_out(&row.id),
                    crate::core::text::spelled_out(first)
                )
            };
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: format!("model[{n}].id"),
                problem,
            });
        }
        seen.insert(key, n);
        rows.push(row);
    }
    Ok(rows)
}

/// The prefix an exact id ending in `*` looks like it names, or `None`. The table shows a
/// prefix row as `w/*` and the fallback as `*`: an exact row for the literal text `w/*` (or
/// `*`) would print like them while no model matches it. `budgets.toml` refuses such an
/// id; the registry skips its entry.
pub fn starred_exact_id(id: &str) -> Option<&str> {
    id.strip_suffix('*')
}

// Rows read to find a row (layering, lookup), counted in the tests: that work must grow
// with the rows, not with their square (T10-17).
#[cfg(test)]
thread_local! {
    static ROWS_VISITED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn visited(row: &BudgetRow) -> &BudgetRow {
    #[cfg(test)]
    ROWS_VISITED.with(|n| n.set(n.get() + 1));
    row
}

/// The layered table every front end reads.
#[derive(Debug, Clone)]
pub struct BudgetTable {
    rows: Vec<BudgetRow>,
    /// Where each exact row stands in `rows`, by id.
    exact: HashMap<String, usize>,
    /// Where each prefix row stands in `rows`, by id.
    prefix: HashMap<String, usize>,
    /// The lengths, in bytes, of the prefix rows' ids: the only places a model id is cut
    /// to look for its prefix row.
    prefix_lengths: BTreeSet<usize>,
    fallback: BudgetRow,
    /// Notes about entries a layer read under an exact id but left out (skipped, or a
    /// spelling that prints like the one read), by that id: a lookup of the id carries
    /// them, so every view of it says why it fell back (tester 18 F9).
    left_out: HashMap<String, Vec<String>>,
}

impl Default for BudgetTable {
    fn default() -> Self {
        BudgetTable {
            rows: Vec::new(),
            exact: HashMap::new(),
            prefix: HashMap::new(),
            prefix_lengths: BTreeSet::new(),
            fallback: BudgetRow::fallback(),
            left_out: HashMap::new(),
        }
    }
}

impl BudgetTable {
    /// Stack layers lowest first; a row with the same id and match kind in a later layer
    /// replaces the earlier one in place (so the table keeps a stable order).
    pub fn layered(layers: impl IntoIterator<Item = Vec<BudgetRow>>) -> BudgetTable {
        let mut table = BudgetTable::default();
        for layer in layers {
            for row in layer {
                table.upsert(row);
            }
        }
        table
    }

    /// Add a row, or replace the row with its id and match kind where it stands: one look
    /// in the index, never a walk over the rows (T10-17).
    pub fn upsert(&mut self, row: BudgetRow) {
        let index = match row.match_kind {
            MatchKind::Exact => &mut self.exact,
            MatchKind::Prefix => {
                self.prefix_lengths.insert(row.id.len());
                &mut self.prefix
            }
        };
        match index.get(&row.id).and_then(|&i| self.rows.get_mut(i)) {
            Some(existing) => {
                visited(existing);
                *existing = row;
            }
            None => {
                index.insert(row.id.clone(), self.rows.len());
                self.rows.push(row);
            }
        }
    }

    pub fn rows(&self) -> &[BudgetRow] {
        &self.rows
    }

    /// Say that a layer left out its entry under the exact id `id`, with `note` naming the
    /// file and why: a lookup of `id` carries the note.
    pub fn note_left_out(&mut self, id: &str, note: String) {
        self.left_out.entry(id.to_string()).or_default().push(note);
    }

    pub fn fallback(&self) -> &BudgetRow {
        &self.fallback
    }

    /// Exact id, then the longest matching prefix, then the fallback. Never fails. One look
    /// in the index for the id, then one per length a prefix row has (longest first).
    pub fn lookup(&self, model: &str) -> Resolved<'_> {
        let at = |index: &HashMap<String, usize>, id: &str| {
            index.get(id).and_then(|&i| self.rows.get(i)).map(visited)
        };
        let left_out = self.left_out.get(model).map_or(&[][..], Vec::as_slice);
        if let Some(row) = at(&self.exact, model) {
            // An exact row from budgets.toml answers whatever the registry left out; one from
            // the sample or a registry stands where the left-out entry would have.
            return Resolved {
                row,
                matched_by: MatchedBy::Exact,
                notes: if row.layer > Layer::Registry {
                    &[]
                } else {
                    left_out
                },
            };
        }
        let best = self
            .prefix_lengths
            .range(..=model.len())
            .rev()
            .filter_map(|&n| model.get(..n))
            .find_map(|prefix| at(&self.prefix, prefix));
        match best {
            Some(row) => Resolved {
                row,
                matched_by: MatchedBy::Prefix,
                notes: left_out,
            },
            None => Resolved {
                row: &self.fallback,
                matched_by: MatchedBy::Fallback,
                notes: left_out,
            },
        }
    }
}

/// A model's effective row: its budget row with the operator's tier override applied. Every
/// view of a request (preview, compact, the console's panes) starts from one of these.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveRow {
    pub model: String,
    pub matched_by: MatchedBy,
    pub row: BudgetRow,
    pub tier_override: Option<Tier>,
    /// What the lookup said about the model's own left-out entry ([`Resolved::notes`]);
    /// none for a row chosen as it is.
    pub notes: Vec<String>,
}

impl EffectiveRow {
    /// A row chosen as it is (the console's Budgets selection: a prefix row stands for its
    /// family, the fallback for unknown ids), with the override applied.
    pub fn of_row(row: &BudgetRow, tier_override: Option<Tier>) -> EffectiveRow {
        // The fallback is the fallback row, not any row whose id is `*` (tester 18 F3).
        let matched_by = match (row.layer, row.match_kind) {
            (Layer::Fallback, _) => MatchedBy::Fallback,
            (_, MatchKind::Exact) => MatchedBy::Exact,
            (_, MatchKind::Prefix) => MatchedBy::Prefix,
        };
        EffectiveRow {
            // A prefix row stands for its family and is no model: it is named as the table
            // shows it (`tencent/*`), which no provider serves, so a console send to it is
            // refused as the CLI's is (tester 49 F6: it went out as model `tencent/`).
            model: row.shown_id(),
            matched_by,
            row: match tier_override {
                Some(t) => row.with_tier(t),
                None => row.clone(),
            },
            tier_override,
            notes: Vec::new(),
        }
    }
}

/// A model id looked up in the table, then the operator's tier override applied.
pub fn effective_row(
    budgets: &BudgetTable,
    model: &str,
    tier_override: Option<Tier>,
) -> EffectiveRow {
    let resolved = budgets.lookup(model);
    let row = match tier_override {
        Some(t) => resolved.row.with_tier(t),
        None => resolved.row.clone(),
    };
    EffectiveRow {
        model: model.to_string(),
        matched_by: resolved.matched_by,
        row,
        tier_override,
        notes: resolved.notes.to_vec(),
    }
}

/// Flags numbers that look wrong rather than using them silently.
pub fn lint_row(row: &BudgetRow) -> Vec<String> {
    let mut out = Vec::new();
    if row.output_tokens > row.input_tokens {
        out.push(format!(
            "output window ({}) larger than input window ({})",
            row.output_tokens, row.input_tokens
        ));
    }
    if row.input_tokens < 1024 {
        out.push(format!(
            "input window {} is smaller than 1024 tokens",
            row.input_tokens
        ));
    }
    if row.output_tokens == 0 {
        out.push("output window is 0".to_string());
    }
    if row.output_tokens > 0
        && row.input_tokens > 0
        && !is_round(row.input_tokens)
        && is_round(row.input_tokens + row.output_tokens)
    {
        out.push(format!(
            "input window {} looks like a context window minus the output ({} + {} = {})",
            row.input_tokens,
            row.input_tokens,
            row.output_tokens,
            row.input_tokens + row.output_tokens
        ));
    }
    if row.prices.cached_input > row.prices.input && row.prices.input > 0.0 {
        out.push(format!(
            "cached input price {} is above the input price {}",
            row.prices.cached_input, row.prices.input
        ));
    }
    if row.prices.input > 0.0 && row.prices.output == 0.0 {
        out.push("input is priced but output is free".to_string());
    }
    if row.prefix_cache && row.prices.cached_input == 0.0 && row.prices.input > 0.0 {
        out.push("prefix_cache set but no cached_input price".to_string());
    }
    if let Some(cap) = row.max_catalog_bytes
        && cap < 512
    {
        out.push(format!(
            "max_catalog_bytes {cap} leaves no room for a catalog"
        ));
    }
    out
}

/// Context windows are published as powers of two, round thousands or multiples of 8K.
fn is_round(n: usize) -> bool {
    n >= 1024 && (n.is_power_of_two() || n.is_multiple_of(1000) || n.is_multiple_of(8192))
}

/// Why `id` cannot name a model, or `None` when it can. One rule for every place an
/// operator or an agent names a model (`--model`, MCP arguments, budgets.toml, imported
/// plans): the budget row, the provider it routes to and the stored plan must all read the
/// same id, so an id with spaces around it, a control, bidi or invisible character or
/// nothing in it is refused rather than trimmed in one place and not in another.
pub fn model_id_problem(id: &str) -> Option<&'static str> {
    name_problem(id)
}

/// Why `name` (a model id, a caller, a tool) cannot be a name shown on one line of a table,
/// or `None`: longer than [`NAME_BYTES`](crate::core::bounds::NAME_BYTES), empty, spaces
/// around it, a control, bidi or invisible character (a line break in a caller forged
/// rows in `history --plans`), or a combining mark first (no visible character of its own).
pub fn name_problem(name: &str) -> Option<&'static str> {
    // The words name the bound; the assertion keeps them true.
    const _: () = assert!(crate::core::bounds::NAME_BYTES == 512);
    if name.len() > crate::core::bounds::NAME_BYTES {
        Some("is longer than 512 bytes")
    } else if name.trim().is_empty() {
        Some("is empty")
    } else if name.trim() != name {
        Some("has spaces around it")
    } else if name
        .chars()
        .any(|c| c.is_control() || crate::core::terminal_text::needs_escape(c))
    {
        Some("holds a control, bidi or invisible character")
    } else if name
        .chars()
        .next()
        .is_some_and(unicode_normalization::char::is_combining_mark)
    {
        // Tester 20 F7: with no base character of its own, it shows as nothing, or fused
        // onto whatever is printed before it.
        Some("starts with a combining mark (no visible character before it)")
    } else {
        None
    }
}

/// The first of `names` (each with the field it came in) that breaks [`name_problem`]'s
/// rule, with its field: the one way a record's several names are checked.
pub fn first_name_problem<'a>(
    names: impl IntoIterator<Item = (&'static str, &'a str)>,
) -> Option<(&'static str, &'static str)> {
    names
        .into_iter()
        .find_map(|(field, name)| name_problem(name).map(|p| (field, p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_bounded_by_the_one_name_rule_in_words_naming_the_bound() {
        use crate::core::bounds::NAME_BYTES;
        assert_eq!(name_problem(&"x".repeat(NAME_BYTES)), None);
        let said = name_problem(&"x".repeat(NAME_BYTES + 1)).unwrap();
        assert_eq!(said, format!("is longer than {NAME_BYTES} bytes"));
        // Cut inside a character still counts bytes, not characters.
        assert!(name_problem(&"日".repeat(NAME_BYTES / 3 + 1)).is_some());
    }

    /// Tester 20 F7: a name made only of combining marks, or starting with one, has no
    /// visible character of its own: alone it shows as nothing, after a space or a column
    /// separator it fuses onto that. Refused; a mark on a base character is a name.
    #[test]
    fn a_name_starting_with_a_combining_mark_is_refused() {
        for name in [
            "\u{301}",
            "\u{e47}\u{e47}",
            "\u{20dd}",
            "\u{301}\u{301}\u{301}x",
            "\u{fe0f}a",
        ] {
            assert_eq!(
                name_problem(name),
                Some("starts with a combining mark (no visible character before it)"),
                "{name:?}"
            );
        }
        for name in ["x\u{301}", "e\u{301}t\u{e9}", "\u{e01}\u{e47}", "a\u{fe0f}"] {
            assert_eq!(name_problem(name), None, "{name:?}");
        }
    }

    fn row(id: &str, kind: MatchKind, input: usize, tier: Tier, layer: Layer) -> BudgetRow {
        RowSpec {
            id: id.into(),
            match_kind: kind,
            input_tokens: input,
            output_tokens: 1000,
            tier,
            max_catalog_bytes: None,
            allows_llm_filter: None,
            filter_model: None,
            hybrid_reasoning: false,
            strict_json: false,
            prefix_cache: false,
            prices: Prices::default(),
            prompt_cache_min_tokens: None,
            tokenizer: None,
            prompt_variant: None,
            source: None,
            temperature: None,
            top_p: None,
            seed: None,
            stop: None,
            max_tokens: None,
        }
        .into_row(layer)
    }

    #[test]
    fn lookup_exact_then_longest_prefix_then_fallback() {
        let table = BudgetTable::layered([vec![
            row(
                "openrouter/",
                MatchKind::Prefix,
                20_000,
                Tier::C,
                Layer::Sample,
            ),
            row(
                "openrouter/anthropic/",
                MatchKind::Prefix,
                150_000,
                Tier::A,
                Layer::Sample,
            ),
            row(
                "openrouter/anthropic/claude-haiku-4-5",
                MatchKind::Exact,
                180_000,
                Tier::A,
                Layer::Sample,
            ),
        ]]);
        let exact = table.lookup("openrouter/anthropic/claude-haiku-4-5");
        assert_eq!(exact.matched_by, MatchedBy::Exact);
        assert_eq!(exact.row.input_tokens, 180_000);
        let longer = table.lookup("openrouter/anthropic/claude-opus-4");
        assert_eq!(longer.matched_by, MatchedBy::Prefix);
        assert_eq!(longer.row.id, "openrouter/anthropic/");
        let shorter = table.lookup("openrouter/meta/llama");
        assert_eq!(shorter.row.id, "openrouter/");
        let none = table.lookup("no/such-model");
        assert_eq!(none.matched_by, MatchedBy::Fallback);
        assert_eq!(none.row.tier, Tier::C);
        assert_eq!(none.row.input_tokens, 16_000);
        assert_eq!(none.row.output_tokens, 1_500);
        assert_eq!(none.row.max_catalog_bytes, Some(10_000));
    }

    /// Tester 18 F3: a registry row whose id was `*` was called "fallback" (by its id) in
    /// the console. The fallback is the fallback row, whatever another row is called.
    #[test]
    fn only_the_fallback_row_is_chosen_as_the_fallback() {
        let starred = row("*", MatchKind::Exact, 128_000, Tier::A, Layer::Registry);
        assert_eq!(
            EffectiveRow::of_row(&starred, None).matched_by,
            MatchedBy::Exact
        );
        let prefix = row("*", MatchKind::Prefix, 128_000, Tier::A, Layer::User);
        assert_eq!(
            EffectiveRow::of_row(&prefix, None).matched_by,
            MatchedBy::Prefix
        );
        let fallback = BudgetRow::fallback();
        assert_eq!(
            EffectiveRow::of_row(&fallback, None).matched_by,
            MatchedBy::Fallback
        );
    }

    /// Tester 18 F9: a lookup of an id whose registry entry was left out carries the note,
    /// whether it falls back, matches a prefix or an exact row of a lower layer; an exact
    /// row from budgets.toml answers it, and other ids carry nothing.
    #[test]
    fn a_lookup_carries_the_note_about_its_own_left_out_entry() {
        let mut table = BudgetTable::layered([
            vec![
                row("p/", MatchKind::Prefix, 20_000, Tier::C, Layer::Sample),
                row("s/a", MatchKind::Exact, 20_000, Tier::C, Layer::Sample),
            ],
            vec![row("u/a", MatchKind::Exact, 20_000, Tier::C, Layer::User)],
        ]);
        for id in ["x/a", "p/a", "s/a", "u/a"] {
            table.note_left_out(id, format!("reg.json: [\"{id}\"] skipped"));
        }
        let said = |id: &str| table.lookup(id).notes.to_vec();
        assert_eq!(said("x/a"), ["reg.json: [\"x/a\"] skipped"]);
        assert_eq!(table.lookup("x/a").matched_by, MatchedBy::Fallback);
        assert_eq!(said("p/a"), ["reg.json: [\"p/a\"] skipped"]);
        assert_eq!(said("s/a"), ["reg.json: [\"s/a\"] skipped"]);
        assert!(said("u/a").is_empty());
        assert!(said("x/b").is_empty());
        let e = effective_row(&table, "x/a", Some(Tier::A));
        assert_eq!(e.notes, said("x/a"));
    }

    #[test]
    fn exact_row_does_not_match_as_prefix() {
        let table = BudgetTable::layered([vec![row(
            "gpt-4o",
            MatchKind::Exact,
            100_000,
            Tier::A,
            Layer::Sample,
        )]]);
        assert_eq!(table.lookup("gpt-4o-mini").matched_by, MatchedBy::Fallback);
    }

    #[test]
    fn later_layers_win_and_keep_position() {
        let table = BudgetTable::layered([
            vec![
                row("a", MatchKind::Exact, 10_000, Tier::B, Layer::Sample),
                row("b", MatchKind::Exact, 10_000, Tier::B, Layer::Sample),
            ],
            vec![row("a", MatchKind::Exact, 50_000, Tier::A, Layer::Registry)],
            vec![row("a", MatchKind::Exact, 70_000, Tier::A, Layer::User)],
        ]);
        assert_eq!(table.rows().len(), 2);
        assert_eq!(table.rows()[0].id, "a");
        assert_eq!(table.rows()[0].layer, Layer::User);
        assert_eq!(table.lookup("a").row.input_tokens, 70_000);
        assert_eq!(table.lookup("b").row.layer, Layer::Sample);
    }

    /// Outside tester 10 T10-17: a registry of 40,000 ids took 7 s on every command, ×5 per
    /// doubling: each row layered in, and each id looked up, was compared with every row
    /// before it. The rows read to find rows now grow with the rows, not their square.
    #[test]
    fn layering_lookup_and_a_files_repeat_check_read_a_bounded_number_of_rows_per_row() {
        let visits = |n: usize| -> usize {
            let ids: Vec<String> = (0..n).map(|i| format!("r/m{i}")).collect();
            let layer = |l: Layer| -> Vec<BudgetRow> {
                ids.iter()
                    .map(|id| row(id, MatchKind::Exact, 128_000, Tier::B, l))
                    .collect()
            };
            let toml: String = ids
                .iter()
                .map(|id| {
                    format!(
                        "[[model]]\nid = \"{id}\"\ninput_tokens = 32000\noutput_tokens = 1000\ntier = \"B\"\n"
                    )
                })
                .collect();
            ROWS_VISITED.with(|v| v.set(0));
            let user = parse_budgets_toml(&toml, "budgets.toml", Layer::User).unwrap();
            let prefix = row("r/", MatchKind::Prefix, 8_000, Tier::C, Layer::Sample);
            let table = BudgetTable::layered([
                vec![prefix],
                layer(Layer::Sample),
                layer(Layer::Registry),
                user,
            ]);
            for id in &ids {
                assert_eq!(table.lookup(id).matched_by, MatchedBy::Exact);
                assert_eq!(table.lookup(&format!("{id}x")).row.id, "r/");
            }
            assert_eq!(table.rows().len(), n + 1);
            ROWS_VISITED.with(|v| v.get())
        };
        let (small, large) = (visits(500), visits(1000));
        // Four layers of n rows and 2n lookups: a handful of rows read per row at most.
        assert!(large <= 10 * 1000, "{large} rows read for 1,000 rows");
        assert!(
            large <= 2 * small + 10,
            "{small} → {large} rows read when the rows doubled"
        );
    }

    #[test]
    fn tier_defaults_apply() {
        let a = row("a", MatchKind::Exact, 100_000, Tier::A, Layer::Sample);
        let b = row("b", MatchKind::Exact, 100_000, Tier::B, Layer::Sample);
        let c = row("c", MatchKind::Exact, 100_000, Tier::C, Layer::Sample);
        assert_eq!(a.max_catalog_bytes, None);
        assert_eq!(b.max_catalog_bytes, Some(22_000));
        assert_eq!(c.max_catalog_bytes, Some(10_000));
        assert_eq!(a.prompt_variant, PromptVariant::FullSteps);
        assert_eq!(c.prompt_variant, PromptVariant::SinglePick);
        assert!(!a.allows_llm_filter && c.allows_llm_filter);
        let overridden = a.with_tier(Tier::C);
        assert_eq!(overridden.max_catalog_bytes, Some(10_000));
        assert_eq!(overridden.prompt_variant, PromptVariant::SinglePick);
    }

    #[test]
    fn lint_flags_suspicious_numbers() {
        let mut r = row("x", MatchKind::Exact, 500, Tier::B, Layer::Registry);
        r.output_tokens = 8000;
        let lint = lint_row(&r);
        assert!(
            lint.iter().any(|l| l.contains("larger than input")),
            "{lint:?}"
        );
        assert!(
            lint.iter().any(|l| l.contains("smaller than 1024")),
            "{lint:?}"
        );
        let mut minus = row(
            "y",
            MatchKind::Exact,
            128_000 - 4096,
            Tier::B,
            Layer::Registry,
        );
        minus.output_tokens = 4096;
        assert!(
            lint_row(&minus)
                .iter()
                .any(|l| l.contains("minus the output"))
        );
        let clean = row("z", MatchKind::Exact, 128_000, Tier::B, Layer::Registry);
        assert!(lint_row(&clean).is_empty(), "{:?}", lint_row(&clean));
    }

    #[test]
    fn toml_rows_parse_and_errors_name_position() {
        let text =
            "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n";
        let rows = parse_budgets_toml(text, "budgets.toml", Layer::User).unwrap();
        assert_eq!(rows[0].tier, Tier::B);
        assert_eq!(rows[0].layer, Layer::User);
        let bad =
            "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"D\"\n";
        let err = parse_budgets_toml(bad, "budgets.toml", Layer::User)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("budgets.toml") && err.contains("line 5"),
            "{err}"
        );
    }

    #[test]
    fn a_second_row_for_an_id_in_one_file_is_refused_naming_both() {
        let row = |id: &str, tier: &str| {
            format!(
                "[[model]]\nid = \"{id}\"\ninput_tokens = 32000\noutput_tokens = 1000\ntier = \"{tier}\"\n"
            )
        };
        let text = format!(
            "{}{}{}",
            row("t/dup", "C"),
            row("t/other", "B"),
            row("t/dup", "B")
        );
        let err = parse_budgets_toml(&text, "budgets.toml", Layer::User)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("budgets.toml")
                && err.contains("model[2].id")
                && err.contains("model[0]")
                && err.contains("t/dup"),
            "{err}"
        );
        let err = parse_budgets_toml(&row(" t/x", "B"), "budgets.toml", Layer::User)
            .unwrap_err()
            .to_string();
        assert!(err.contains("has spaces around it"), "{err}");
        // The table's way of showing a prefix row, copied back as an id.
        let err = parse_budgets_toml(&row("w/*", "C"), "budgets.toml", Layer::User)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model[0].id") && err.contains(r#"match = "prefix""#),
            "{err}"
        );
        // Tester 18 F2: composed and decomposed, or a no-break space, print as one id.
        for (first, second, spelled) in [
            ("t/caf\u{e9}", "t/cafe\u{301}", "t/cafe\\u{301}"),
            ("t/a b", "t/a\u{a0}b", "t/a\\u{a0}b"),
        ] {
            let text = format!("{}{}", row(first, "C"), row(second, "A"));
            let err = parse_budgets_toml(&text, "budgets.toml", Layer::User)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("model[1].id")
                    && err.contains("prints like model[0]'s id")
                    && err.contains(spelled),
                "{err}"
            );
        }
    }

    #[test]
    fn nan_infinity_negative_and_huge_numbers_are_refused_by_field() {
        let row = |extra: &str| {
            format!(
                "[[model]]\nid = \"m\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n{extra}\n"
            )
        };
        for (extra, field, says) in [
            ("prices = { input = nan }", "prices.input", "is NaN"),
            ("prices = { output = inf }", "prices.output", "is infinite"),
            (
                "prices = { cached_input = -inf }",
                "prices.cached_input",
                "is infinite",
            ),
            ("prices = { input = -0.5 }", "prices.input", "is -0.5"),
            (
                "prices = { input = 1e300 }",
                "prices.input",
                "expected a number",
            ),
        ] {
            let err = parse_budgets_toml(&row(extra), "budgets.toml", Layer::User)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("budgets.toml: field 'model[\"m\"].")
                    && err.contains(field)
                    && err.contains(says),
                "{extra}: {err}"
            );
        }
        // Whole numbers are read against their bound with the file (one bound per key, with
        // its line: tester 9 T9-12).
        for (extra, says) in [
            (
                "max_catalog_bytes = 9223372036854775807",
                "line 6, column 21: field 'max_catalog_bytes' is 9223372036854775807; expected a whole number from 0 to 1073741824",
            ),
            (
                "prompt_cache_min_tokens = 1000000000000",
                "line 6, column 27: field 'prompt_cache_min_tokens' is 1000000000000; expected a whole number from 0 to 100000000",
            ),
        ] {
            let err = parse_budgets_toml(&row(extra), "budgets.toml", Layer::User)
                .unwrap_err()
                .to_string();
            assert_eq!(err, format!("budgets.toml: {says}"));
        }
        let huge =
            "[[model]]\nid = \"m\"\ninput_tokens = 100000001\noutput_tokens = 2000\ntier = \"B\"\n";
        let err = parse_budgets_toml(huge, "budgets.toml", Layer::User)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("input_tokens") && err.contains("100000001"),
            "{err}"
        );
    }

    #[test]
    fn tokenizer_guess() {
        assert_eq!(
            Tokenizer::for_model_id("openai/gpt-4o-mini"),
            Tokenizer::O200k
        );
        assert_eq!(Tokenizer::for_model_id("gpt-4-turbo"), Tokenizer::Cl100k);
        assert_eq!(
            Tokenizer::for_model_id("anthropic/claude-sonnet-4-5"),
            Tokenizer::Estimate
        );
    }
}
