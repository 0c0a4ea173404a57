//! LiteLLM's `model_prices_and_context_window.json` as a budgets layer.
//!
//! Mapping: `max_input_tokens` (else legacy `max_tokens`) → input, `max_output_tokens` (else
//! `max_tokens`) → output, `*_cost_per_token` × 10⁶ → prices per million,
//! `supports_prompt_caching` → prefix_cache, `supports_reasoning` → hybrid_reasoning,
//! `supports_response_schema` → strict_json. Unknown fields are ignored; `sample_spec` and
//! models that are not chat/completion/responses models are skipped.
//!
//! Numbers go through [`crate::core::bounds`]. One rule for an entry that cannot be read as
//! written — a window or price negative, infinite, absurd or not whole, a number written as
//! a word (`"lots"`, `[1]`), a flag that is not `true`/`false`, a mode that is not a word, an
//! entry that is not an object: the entry is skipped and one
//! note names the model, each such field and its value as written (`9223372036854775808`,
//! not `9.2e18`); the rest of the registry is read (outside tester 10 T10-9: one upstream
//! typo refused all 4,500 entries). A number written as a string that parses cleanly
//! (`"max_input_tokens": "128000"`) is read. A window of 0 is no window: LiteLLM writes 0
//! for one it does not know.
//!
//! A key given twice is read as every JSON reader reads it, the last copy, and a note says
//! so; ids that print alike (`keyed/café` composed and decomposed, the catalog's notion,
//! [`printed_alike`](crate::core::text::printed_alike)) are one row: the NFC spelling
//! (else the first in code-point order) is read and a note says how many were left out
//! (T10-18).
//!
//! When a model is priced higher above some input size (`input_cost_per_token_above_200k_tokens`
//! above `input_cost_per_token`), the budget's input ceiling is that size: the advertised
//! window beyond it is a premium tier, not a safe default. The row's source says so. The
//! above-price is read as every price is; one no higher, and a break at 0k, cut nothing.
//!
//! The tier is derived, provisionally, and marked as derived:
//! - C: free (`:free` / `/free` ids, or an input price of 0), or an input window under 32K;
//! - A: input priced at $1 or more per million tokens and function calling supported;
//! - B: everything else.

use regex::Regex;
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::sync::LazyLock;

use crate::core::bounds::{self, finite_in, not_a_number_in, not_a_whole_number_in};
use crate::core::budget::{BudgetRow, Layer, MatchKind, Prices, Tier, Tokenizer, lint_row};
use crate::core::error::CoreError;

const CHAT_MODES: [&str; 3] = ["chat", "completion", "responses"];

/// The result of reading a registry: rows, and what was passed over.
#[derive(Debug, Clone)]
pub struct RegistryImport {
    pub rows: Vec<BudgetRow>,
    pub skipped_not_chat: usize,
    pub skipped_no_window: usize,
    /// Entries whose id breaks the one name rule
    /// ([`model_id_problem`](crate::core::budget::model_id_problem)) or ends in `*`
    /// ([`starred_exact_id`](crate::core::budget::starred_exact_id)), each also said in a
    /// note: such an id would be sent, budgeted and stored as read, and the store's own
    /// export could not be imported back; one ending in `*` prints like a prefix row or the
    /// fallback.
    pub skipped_bad_id: usize,
    /// Entries skipped for a value out of bounds or of the wrong type (or not an object),
    /// each also said in a note naming the model and the fields.
    pub skipped_bad_value: usize,
    /// What was passed over or chosen, each naming the file and the model: an entry
    /// skipped (with its fields and values), a key given twice, ids that print alike.
    pub notes: Vec<String>,
    /// Each id whose entry was left out with a note (skipped, or a spelling that prints
    /// like the one read), with where its note stands in `notes`: a lookup of that id says
    /// why it has no row.
    pub left_out: Vec<(String, usize)>,
}

static PRICE_BREAK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^input_cost_per_token_above_(\d+)k_tokens$").expect("constant regex")
});

/// Windows, in tokens.
const WINDOW: RangeInclusive<f64> = 0.0..=*bounds::TOKENS.end() as f64;
/// Prices, in USD per token (the registry's unit).
const PRICE_PER_TOKEN: RangeInclusive<f64> = 0.0..=*bounds::PRICE_PER_MILLION.end() / 1e6;

/// One model's entry as it is read: what could not be read is collected in `bad`.
struct EntryReader<'a> {
    entry: &'a Map<String, Value>,
    id: &'a str,
    /// `field is VALUE; expected …`, one per field that cannot be read as written.
    bad: Vec<String>,
}

impl EntryReader<'_> {
    /// A number field: a JSON number, or a string that parses cleanly as one, finite and in
    /// `range` ([`finite_in`]). Absent or null is `None`; anything else is `None` and said
    /// in `bad` with the value as written.
    fn number(&mut self, key: &str, range: &RangeInclusive<f64>) -> Option<f64> {
        let value = self.entry.get(key)?;
        let n = match value {
            Value::Null => return None,
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        // A number (or a string of one) out of bounds, or beyond what a double holds (1e400).
        let numeric = n.is_some() || matches!(value, Value::Number(_));
        match n {
            Some(n) if finite_in(n, range, "", key).is_ok() => Some(n),
            _ if numeric => {
                self.bad
                    .push(format!("{key} {}", not_a_number_in(&written(value), range)));
                None
            }
            _ => {
                self.bad
                    .push(format!("{key} is {}, not a number", written(value)));
                None
            }
        }
    }

    /// A yes/no field: absent or null is no; anything but `true` or `false` is no and said
    /// in `bad` (`"yes"` read as no would have made a tier-A model tier B, unsaid).
    fn flag(&mut self, key: &str) -> bool {
        match self.entry.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.bad
                    .push(format!("{key} is {}, not true or false", written(other)));
                false
            }
        }
    }

    /// A word field (`mode`): absent or null is `None`; anything but a string is `None` and
    /// said in `bad`.
    fn word(&mut self, key: &str) -> Option<&str> {
        match self.entry.get(key) {
            None | Some(Value::Null) => None,
            // A word: letters, digits, `_` and `-` (tester 29 R4: `"chat "` and `""` were read
            // as some other mode and the model dropped, unsaid).
            Some(Value::String(s))
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')) =>
            {
                Some(s.as_str())
            }
            Some(other) => {
                self.bad
                    .push(format!("{key} is {}, not a word", written(other)));
                None
            }
        }
    }

    /// A window: a [`count`](Self::count) where 0 is no window (LiteLLM writes 0 for a
    /// window it does not know; a model that takes no tokens is none).
    fn window(&mut self, key: &str) -> Option<usize> {
        self.count(key).filter(|&n| n > 0)
    }

    /// A token count: a [`number`](Self::number) in [`bounds::TOKENS`] that is also whole
    /// (`128000.5` tokens is a broken entry, not 128,000). A number out of bounds or not
    /// whole says the whole-number bound; a word says it is not a number.
    fn count(&mut self, key: &str) -> Option<usize> {
        let value = self.entry.get(key)?;
        let bad_before = self.bad.len();
        let n = self.number(key, &WINDOW);
        if self.bad.len() == bad_before && n.is_none_or(|v| v.fract() == 0.0) {
            return n.map(|v| v as usize);
        }
        let numeric = match value {
            Value::Number(_) => true,
            Value::String(s) => s.trim().parse::<f64>().is_ok(),
            _ => false,
        };
        if numeric {
            self.bad.truncate(bad_before);
            self.bad.push(format!(
                "{key} {}",
                not_a_whole_number_in(&written(value), &bounds::TOKENS)
            ));
        }
        None
    }
}

/// A value as the file writes it (numbers digit for digit: serde_json keeps them as
/// written), at most 40 characters.
fn written(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The registry's top level as the file writes it: each key with every value given for it,
/// in file order (a `Value` object keeps only the last copy of a repeated key, unsaid).
struct Entries(BTreeMap<String, Vec<Value>>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of model id → fields")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                while let Some((id, value)) = map.next_entry::<String, Value>()? {
                    out.entry(id).or_default().push(value);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// What one entry gives.
enum Read {
    Row(Box<BudgetRow>),
    NoWindow,
    /// Each field that cannot be read as written: `field is VALUE; expected …`.
    Bad(Vec<String>),
}

/// Parse a LiteLLM registry text. `origin` names the file in errors and in each row's source.
/// Only a text that is no JSON object is an error; an entry that cannot be read is skipped
/// and said in a note.
pub fn parse_registry(text: &str, origin: &str) -> Result<RegistryImport, CoreError> {
    let not_a_registry = || CoreError::Content {
        origin: origin.to_string(),
        message: "not a LiteLLM registry: expected a JSON object of model id → fields".into(),
    };
    if !text.trim_start().starts_with('{') {
        // Said as JSON's own error when it is no JSON at all.
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| CoreError::json(origin, text, &e))?;
        return Err(not_a_registry());
    }
    let Entries(models) =
        serde_json::from_str(text).map_err(|e| CoreError::json(origin, text, &e))?;
    let mut out = RegistryImport {
        rows: Vec::new(),
        skipped_not_chat: 0,
        skipped_no_window: 0,
        skipped_bad_id: 0,
        skipped_bad_value: 0,
        notes: Vec::new(),
        left_out: Vec::new(),
    };
    let left_out = |out: &mut RegistryImport, id: &str, note: String| {
        out.left_out.push((id.to_string(), out.notes.len()));
        out.notes.push(note);
    };
    let alike = spellings_alike(models.keys().map(String::as_str));
    for (id, copies) in &models {
        if id == "sample_spec" {
            continue;
        }
        if let Some(note) = id_refused(id, origin) {
            out.skipped_bad_id += 1;
            left_out(&mut out, id, note);
            continue;
        }
        if let Some(&(kept, ways, chosen)) = alike.get(id.as_str()) {
            // One row for the ids a reader cannot tell apart; the others are left out,
            // said once.
            if kept != id {
                continue;
            }
            // The note belongs to each spelling left out: looked up as written, it falls back.
            for (other, _) in alike.iter().filter(|(o, a)| a.0 == id && **o != id) {
                out.left_out.push((other.to_string(), out.notes.len()));
            }
            out.notes.push(format!(
                "{origin}: model id {} is spelled {} ways that print alike: {} is read, the other{} left out, as --model could not say which",
                crate::core::terminal_text::quoted(id),
                ways,
                chosen,
                if ways > 2 { "s" } else { "" },
            ));
        }
        let Some(entry) = copies.last() else {
            continue;
        };
        if copies.len() > 1 {
            out.notes.push(format!(
                "{origin}: model id {} is given {} times: the last is read, as JSON readers read it",
                crate::core::terminal_text::quoted(id),
                copies.len()
            ));
        }
        let Value::Object(entry) = entry else {
            out.skipped_bad_value += 1;
            let note = format!(
                "{origin}: [\"{id}\"] is {}, not an object of fields: skipped",
                written(entry)
            );
            left_out(&mut out, id, note);
            continue;
        };
        let mut reader = EntryReader {
            entry,
            id,
            bad: Vec::new(),
        };
        if !CHAT_MODES.contains(&reader.word("mode").unwrap_or("chat")) && reader.bad.is_empty() {
            out.skipped_not_chat += 1;
            continue;
        }
        match row_from_entry(&mut reader, origin) {
            Read::Row(row) => out.rows.push(*row),
            Read::NoWindow => out.skipped_no_window += 1,
            Read::Bad(fields) => {
                out.skipped_bad_value += 1;
                let note = format!(
                    "{origin}: [\"{id}\"] skipped, the rest read: {}",
                    fields.join(", and ")
                );
                left_out(&mut out, id, note);
            }
        }
    }
    Ok(out)
}

/// Why the entry under `id` is skipped for its id alone, as a note naming `origin`, or
/// `None`: an id that breaks the one name rule, or an exact id ending in `*`, which
/// `budgets.toml` refuses too (tester 18 F3: `*` printed like the fallback, `star/*` like a
/// prefix row).
fn id_refused(id: &str, origin: &str) -> Option<String> {
    let shown = crate::core::terminal_text::quoted(id);
    if let Some(problem) = crate::core::budget::model_id_problem(id) {
        return Some(format!(
            "{origin}: model id {shown} {problem}: skipped, as --model and budgets.toml refuse such an id"
        ));
    }
    crate::core::budget::starred_exact_id(id).map(|_| {
        format!(
            "{origin}: model id {shown} ends in '*', as the table shows a prefix row or the fallback: skipped, as budgets.toml refuses such an exact id"
        )
    })
}

/// For each id (of those the name rule takes) that prints like another
/// ([`printed_alike`](crate::core::text::printed_alike)): the spelling its group keeps
/// (the composed, NFC one, else the first in code-point order), how many spellings the
/// group has, and which of the two rules chose it. Only an id with a character beyond ASCII can print like another id (two ASCII
/// ids print alike only when they are one), so only those are normalised, and an ASCII id
/// joins a group whose shared spelling it is (`K` and the Kelvin sign).
fn spellings_alike<'a>(
    ids: impl Iterator<Item = &'a str> + Clone,
) -> HashMap<&'a str, (&'a str, usize, &'static str)> {
    let usable = |id: &str| id != "sample_spec" && id_refused(id, "").is_none();
    let mut groups: HashMap<String, Vec<&'a str>> = HashMap::new();
    for id in ids.clone().filter(|id| !id.is_ascii() && usable(id)) {
        groups
            .entry(crate::core::text::printed_alike(id))
            .or_default()
            .push(id);
    }
    if groups.is_empty() {
        return HashMap::new();
    }
    for id in ids.filter(|id| id.is_ascii() && usable(id)) {
        if let Some(group) = groups.get_mut(id) {
            group.push(id);
        }
    }
    let mut out = HashMap::new();
    for mut group in groups.into_values().filter(|g| g.len() > 1) {
        group.sort_unstable();
        let composed: Vec<&str> = group
            .iter()
            .copied()
            .filter(|s| unicode_normalization::is_nfc(s))
            .collect();
        let (kept, chosen) = match composed[..] {
            [one] => (one, "the composed (NFC) spelling"),
            // Several composed spellings (a no-break space and a space) or none.
            [first, ..] => (first, "the spelling first in code-point order"),
            [] => (group[0], "the spelling first in code-point order"),
        };
        for id in &group {
            out.insert(*id, (kept, group.len(), chosen));
        }
    }
    out
}

fn row_from_entry(r: &mut EntryReader, origin: &str) -> Read {
    let (id, entry) = (r.id, r.entry);
    let mut notes: Vec<String> = Vec::new();
    // Every field is read before anything skips the entry, so each bad one is said.
    let legacy = r.window("max_tokens");
    let max_input = r.window("max_input_tokens");
    let max_output = r.window("max_output_tokens");
    let function_calling = r.flag("supports_function_calling");
    let hybrid_reasoning = r.flag("supports_reasoning");
    let strict_json = r.flag("supports_response_schema");
    let prefix_cache = r.flag("supports_prompt_caching");
    let mut per_million = |key: &str| -> f64 {
        r.number(key, &PRICE_PER_TOKEN)
            .map(|p| round6(p * 1e6))
            .unwrap_or(0.0)
    };
    let prices = Prices {
        input: per_million("input_cost_per_token"),
        cached_input: per_million("cache_read_input_token_cost"),
        output: per_million("output_cost_per_token"),
    };
    // A break is read as every price is (a word skips the entry) and cuts the window only
    // where the price above it is higher (tester 18 F4: gemini-exp-1206, 0 below and above
    // 128k, was cut from 2,097,152). A break at 0k cuts nothing: a price from the first
    // token is the model's price, and a 0-token ceiling is a model that takes nothing,
    // which a window of 0 is not either.
    let mut price_break: Option<usize> = None;
    for key in entry.keys() {
        let Some(at) = PRICE_BREAK.captures(key) else {
            continue;
        };
        let above = r.number(key, &PRICE_PER_TOKEN).map(|p| round6(p * 1e6));
        let at = at[1]
            .parse::<usize>()
            .ok()
            .and_then(|k| k.checked_mul(1000));
        if let (Some(above), Some(at)) = (above, at)
            && above > prices.input
            && at > 0
        {
            price_break = Some(price_break.map_or(at, |b| b.min(at)));
        }
    }
    if !r.bad.is_empty() {
        return Read::Bad(std::mem::take(&mut r.bad));
    }
    let advertised = match max_input {
        Some(n) => n,
        None => {
            let Some(n) = legacy else {
                return Read::NoWindow;
            };
            // Given as 0 is LiteLLM's "not known", not absent (tester 29 R3).
            let given = r
                .entry
                .get("max_input_tokens")
                .is_some_and(|v| !v.is_null());
            notes.push(
                if given {
                    "max_input_tokens is 0 (not known): used legacy max_tokens"
                } else {
                    "no max_input_tokens: used legacy max_tokens"
                }
                .into(),
            );
            n
        }
    };
    let output = match max_output.or(legacy) {
        Some(n) => n,
        None => {
            notes.push("no output window: assumed 4096".into());
            4096
        }
    };
    let input = match price_break {
        Some(limit) if limit < advertised => {
            notes.push(format!(
                "advertised {advertised} tokens, priced higher above {limit}: budget uses {limit}"
            ));
            limit
        }
        _ => advertised,
    };
    let lower = id.to_ascii_lowercase();
    let (tier, why) = if lower.ends_with(":free") || lower.ends_with("/free") {
        (Tier::C, "free model id")
    } else if prices.input == 0.0 {
        (Tier::C, "input price 0")
    } else if input < 32_000 {
        (Tier::C, "input window under 32K")
    } else if prices.input >= 1.0 && function_calling {
        (Tier::A, "input ≥ $1/M with function calling")
    } else {
        (Tier::B, "mid-priced or no function calling")
    };
    let mut source = format!("LiteLLM registry {origin}: tier {tier} derived ({why})");
    for n in &notes {
        source.push_str("; ");
        source.push_str(n);
    }
    let mut row = BudgetRow {
        id: id.to_string(),
        match_kind: MatchKind::Exact,
        input_tokens: input,
        output_tokens: output,
        tier,
        max_catalog_bytes: tier.default_catalog_bytes(),
        allows_llm_filter: tier != Tier::A,
        filter_model: None,
        hybrid_reasoning,
        strict_json,
        prefix_cache,
        prices,
        prompt_cache_min_tokens: None,
        tokenizer: Tokenizer::for_model_id(id),
        prompt_variant: tier.default_prompt_variant(),
        layer: Layer::Registry,
        source,
        tier_derived: true,
        lint: Vec::new(),
        explicit_catalog_cap: false,
        sampling: Default::default(),
        max_tokens: None,
    };
    row.lint = lint_row(&row);
    if !function_calling {
        row.lint.push("registry says no function calling".into());
    }
    Read::Row(Box::new(row))
}

/// Prices like 3e-06 × 1e6 come out as 2.9999999999999996; six decimals is plenty.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row read, with its input window.
    fn windows(imp: &RegistryImport) -> Vec<(&str, usize)> {
        imp.rows
            .iter()
            .map(|r| (r.id.as_str(), r.input_tokens))
            .collect()
    }

    #[test]
    fn maps_fields_and_derives_tier() {
        let text = r#"{
            "sample_spec": {"max_input_tokens": "doc", "mode": "chat"},
            "big/model": {"max_input_tokens": 1000000, "max_output_tokens": 64000, "input_cost_per_token": 3e-06,
                "input_cost_per_token_above_200k_tokens": 6e-06, "output_cost_per_token": 1.5e-05,
                "cache_read_input_token_cost": 3e-07, "supports_prompt_caching": true, "supports_function_calling": true,
                "supports_reasoning": true, "mode": "chat"},
            "openrouter/x/y:free": {"max_input_tokens": 131072, "max_output_tokens": 8192, "input_cost_per_token": 0, "mode": "chat"},
            "cheap": {"max_tokens": 65536, "input_cost_per_token": 2e-07, "output_cost_per_token": 4e-07, "supports_function_calling": true},
            "embed": {"max_input_tokens": 8192, "mode": "embedding"},
            "nowindow": {"mode": "chat"}
        }"#;
        let imp = parse_registry(text, "reg.json").unwrap();
        assert_eq!(imp.skipped_not_chat, 1);
        assert_eq!(imp.skipped_no_window, 1);
        let big = imp.rows.iter().find(|r| r.id == "big/model").unwrap();
        assert_eq!(big.input_tokens, 200_000);
        assert_eq!(big.tier, Tier::A);
        assert!(big.tier_derived && big.prefix_cache && big.hybrid_reasoning);
        assert_eq!(big.prices.input, 3.0);
        assert_eq!(big.prices.cached_input, 0.3);
        assert!(
            big.source.contains("priced higher above 200000"),
            "{}",
            big.source
        );
        let free = imp.rows.iter().find(|r| r.id.ends_with(":free")).unwrap();
        assert_eq!(free.tier, Tier::C);
        assert_eq!(free.max_catalog_bytes, Some(10_000));
        let cheap = imp.rows.iter().find(|r| r.id == "cheap").unwrap();
        assert_eq!(cheap.tier, Tier::B);
        assert!(cheap.source.contains("legacy max_tokens"));
    }

    #[test]
    fn numbers_as_strings_are_read_and_words_skip_the_entry_with_a_note() {
        let text = r#"{
            "s/read": {"max_input_tokens": " 128000 ", "max_output_tokens": "8192", "input_cost_per_token": "3e-06", "mode": "chat"},
            "s/word": {"max_input_tokens": "lots", "max_output_tokens": 4096, "output_cost_per_token": [1], "mode": "chat"}
        }"#;
        let imp = parse_registry(text, "reg.json").unwrap();
        let read = imp.rows.iter().find(|r| r.id == "s/read").unwrap();
        assert_eq!((read.input_tokens, read.output_tokens), (128_000, 8192));
        assert_eq!(read.prices.input, 3.0);
        assert_eq!(imp.rows.len(), 1);
        assert_eq!(imp.skipped_bad_value, 1);
        assert_eq!(
            imp.notes,
            [
                r#"reg.json: ["s/word"] skipped, the rest read: max_input_tokens is "lots", not a number, and output_cost_per_token is [1], not a number"#
            ],
        );
    }

    /// Outside tester 10 T10-9: one entry with a bad window or price refused the whole
    /// registry (exit 2), one at a time, while a word for a number was skipped with a note.
    /// One rule now: the entry is skipped, one note names it, each field and its value as
    /// written; every other entry is read.
    #[test]
    fn an_entry_with_a_value_out_of_bounds_is_skipped_with_a_note_and_the_rest_read() {
        let tokens = "expected a whole number from 0 to 100000000";
        for (entry, says) in [
            (
                r#"{"max_input_tokens": -128000}"#,
                format!("max_input_tokens is -128000; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 128000.7}"#,
                format!("max_input_tokens is 128000.7; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 128000.5}"#,
                format!("max_input_tokens is 128000.5; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 9223372036854775808}"#,
                format!("max_input_tokens is 9223372036854775808; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 9223372036854775807}"#,
                format!("max_input_tokens is 9223372036854775807; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 18446744073709551616}"#,
                format!("max_input_tokens is 18446744073709551616; {tokens}"),
            ),
            // serde_json keeps the digits, and writes the exponent's sign.
            (
                r#"{"max_input_tokens": 1e400}"#,
                format!("max_input_tokens is 1e+400; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": 1e300}"#,
                format!("max_input_tokens is 1e+300; {tokens}"),
            ),
            (
                r#"{"max_input_tokens": "NaN"}"#,
                format!(r#"max_input_tokens is "NaN"; {tokens}"#),
            ),
            (
                r#"{"max_input_tokens": "inf"}"#,
                format!(r#"max_input_tokens is "inf"; {tokens}"#),
            ),
            (
                r#"{"max_input_tokens": 8000, "input_cost_per_token": -1}"#,
                "input_cost_per_token is -1; expected a number from 0 to 1".into(),
            ),
            (
                r#"{"max_input_tokens": 8000, "output_cost_per_token": -1e-6}"#,
                "output_cost_per_token is -1e-6; expected a number from 0 to 1".into(),
            ),
            (
                r#"{"max_input_tokens": 8000, "input_cost_per_token": 5.0}"#,
                "input_cost_per_token is 5.0; expected a number from 0 to 1".into(),
            ),
            (
                r#"{"max_input_tokens": -1, "max_output_tokens": -1}"#,
                format!("max_input_tokens is -1; {tokens}, and max_output_tokens is -1; {tokens}"),
            ),
            ("[1, 2]", "is [1,2], not an object of fields".into()),
        ] {
            let text = format!(
                r#"{{"m/a": {{"max_input_tokens": 8000, "mode": "chat"}}, "m/x": {entry}, "m/z": {{"max_input_tokens": 9000}}}}"#
            );
            let imp = parse_registry(&text, "reg.json").unwrap_or_else(|e| panic!("{entry}: {e}"));
            let ids: Vec<&str> = imp.rows.iter().map(|r| r.id.as_str()).collect();
            assert_eq!(ids, ["m/a", "m/z"], "{entry}");
            assert_eq!(imp.skipped_bad_value, 1, "{entry}");
            assert_eq!(imp.notes.len(), 1, "{entry}: {:?}", imp.notes);
            assert!(
                imp.notes[0].starts_with(r#"reg.json: ["m/x"]"#) && imp.notes[0].contains(&says),
                "{entry}: {:?}",
                imp.notes
            );
        }
    }

    /// Outside tester 10 T10-18: a key given twice was read last-wins without a word, and
    /// `keyed/café` composed and decomposed were two rows printed alike.
    #[test]
    fn a_repeated_key_and_ids_that_print_alike_are_one_row_and_said() {
        let text = "{\"keyed/a\": {\"max_input_tokens\": 8000}, \"keyed/a\": {\"max_input_tokens\": 64000},
            \"keyed/cafe\u{301}\": {\"max_input_tokens\": 2000000}, \"keyed/caf\u{e9}\": {\"max_input_tokens\": 1000},
            \"keyed/b\": {\"max_input_tokens\": 5000}}";
        let imp = parse_registry(text, "reg.json").unwrap();
        assert_eq!(
            windows(&imp),
            [
                ("keyed/a", 64_000),
                ("keyed/b", 5000),
                ("keyed/caf\u{e9}", 1000)
            ]
        );
        assert_eq!(
            imp.notes,
            [
                "reg.json: model id 'keyed/a' is given 2 times: the last is read, as JSON readers read it",
                "reg.json: model id 'keyed/caf\u{e9}' is spelled 2 ways that print alike: the composed (NFC) spelling is read, the other left out, as --model could not say which",
            ]
        );
        // The same row whichever spelling the file gives first.
        let swapped = "{\"keyed/caf\u{e9}\": {\"max_input_tokens\": 1000}, \"keyed/cafe\u{301}\": {\"max_input_tokens\": 2000000}}";
        let imp = parse_registry(swapped, "reg.json").unwrap();
        assert_eq!(imp.rows.len(), 1);
        assert_eq!(imp.rows[0].id, "keyed/caf\u{e9}");
        // An ASCII id and one that prints like it (the Kelvin sign is K once composed).
        let kelvin = "{\"k/\u{212a}\": {\"max_input_tokens\": 1000}, \"k/K\": {\"max_input_tokens\": 2000}, \"k/k\": {\"max_input_tokens\": 3000}}";
        let imp = parse_registry(kelvin, "reg.json").unwrap();
        let ids: Vec<&str> = imp.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["k/K", "k/k"]);
        // Neither spelling composed: the first in code-point order, whatever the file order.
        let neither = "{\"k/e\u{323}\u{302}\": {\"max_input_tokens\": 1000}, \"k/e\u{302}\u{323}\": {\"max_input_tokens\": 2000}}";
        let imp = parse_registry(neither, "reg.json").unwrap();
        assert_eq!(imp.rows.len(), 1);
        assert_eq!(imp.rows[0].id, "k/e\u{302}\u{323}");
        assert!(
            imp.notes[0].contains("the spelling first in code-point order is read"),
            "{:?}",
            imp.notes
        );
    }

    /// Outside tester 10 T10-9 remainder: a flag or a mode of the wrong type was read as
    /// "no" or as "chat" without a word (`"supports_function_calling": "yes"` made a tier-A
    /// model tier B). One rule with the numbers: the entry is skipped and said.
    #[test]
    fn a_flag_or_mode_of_the_wrong_type_skips_the_entry_with_a_note() {
        for (entry, says) in [
            (
                r#"{"max_input_tokens": 8000, "supports_function_calling": "yes"}"#,
                r#"supports_function_calling is "yes", not true or false"#,
            ),
            (
                r#"{"max_input_tokens": 8000, "supports_prompt_caching": 1}"#,
                "supports_prompt_caching is 1, not true or false",
            ),
            (
                r#"{"max_input_tokens": 8000, "mode": 5}"#,
                "mode is 5, not a word",
            ),
            (
                r#"{"max_input_tokens": 8000, "mode": "chat "}"#,
                r#"mode is "chat ", not a word"#,
            ),
            (
                r#"{"max_input_tokens": 8000, "mode": ""}"#,
                r#"mode is "", not a word"#,
            ),
        ] {
            let text = format!(
                r#"{{"m/a": {{"max_input_tokens": 8000}}, "m/x": {entry}, "m/z": {{"max_input_tokens": 9000, "supports_reasoning": null}}}}"#
            );
            let imp = parse_registry(&text, "reg.json").unwrap();
            let ids: Vec<&str> = imp.rows.iter().map(|r| r.id.as_str()).collect();
            assert_eq!(ids, ["m/a", "m/z"], "{entry}");
            assert_eq!(imp.skipped_bad_value, 1, "{entry}");
            assert_eq!(
                imp.notes,
                [format!(
                    r#"reg.json: ["m/x"] skipped, the rest read: {says}"#
                )],
                "{entry}"
            );
        }
    }

    /// LiteLLM writes a window of 0 for one it does not know (vercel_ai_gateway's embedding
    /// models, listed as chat): 0 is no window, never a model that takes nothing (tester 10
    /// T10-9: a 0-token row was budgeted "OVER the input ceiling by 214" and sent).
    #[test]
    fn a_window_of_zero_is_no_window() {
        let text = r#"{
            "z/none": {"max_input_tokens": 0, "max_output_tokens": 0, "mode": "chat"},
            "z/legacy": {"max_input_tokens": 0, "max_tokens": 8192, "mode": "chat"},
            "z/out0": {"max_input_tokens": 8000, "max_output_tokens": 0, "mode": "chat"}
        }"#;
        let imp = parse_registry(text, "reg.json").unwrap();
        assert_eq!(imp.skipped_no_window, 1);
        let rows: Vec<(&str, usize, usize)> = imp
            .rows
            .iter()
            .map(|r| (r.id.as_str(), r.input_tokens, r.output_tokens))
            .collect();
        assert_eq!(rows, [("z/legacy", 8192, 8192), ("z/out0", 8000, 4096)]);
        // Tester 29 R3: the field is there, as 0; it was said to be absent.
        let legacy = &imp.rows[0];
        assert!(
            legacy
                .source
                .contains("max_input_tokens is 0 (not known): used legacy max_tokens"),
            "{}",
            legacy.source
        );
        let out0 = &imp.rows[1];
        assert!(
            out0.source.contains("no output window: assumed 4096"),
            "{}",
            out0.source
        );
    }

    /// Tester 10 T10-9: `keyed/nbsp x` with a no-break space printed like the one with a space,
    /// and both were rows.
    #[test]
    fn an_id_with_a_no_break_space_prints_like_the_spaced_one() {
        let text = "{\"keyed/nbsp\u{a0}x\": {\"max_input_tokens\": 1000}, \"keyed/nbsp x\": {\"max_input_tokens\": 2000}}";
        let imp = parse_registry(text, "reg.json").unwrap();
        let rows: Vec<(&str, usize)> = imp
            .rows
            .iter()
            .map(|r| (r.id.as_str(), r.input_tokens))
            .collect();
        assert_eq!(rows, [("keyed/nbsp x", 2000)]);
        assert_eq!(imp.notes.len(), 1, "{:?}", imp.notes);
        assert_eq!(
            imp.notes,
            [
                "reg.json: model id 'keyed/nbsp x' is spelled 2 ways that print alike: the spelling first in code-point order is read, the other left out, as --model could not say which"
            ]
        );
    }

    /// Tester 18 F3: keys `*` and `star/*` became exact rows printed like the fallback and
    /// like a prefix row, ids budgets.toml refuses. The registry applies the same rule: the
    /// entry is skipped, one note says why, and the summary counts it with the ids refused.
    #[test]
    fn an_id_ending_in_a_star_is_skipped_as_budgets_toml_refuses_it() {
        let entry = r#"{"max_input_tokens": 128000, "mode": "chat"}"#;
        let text = format!(r#"{{"*": {entry}, "star/*": {entry}, "star/a": {entry}}}"#);
        let imp = parse_registry(&text, "reg.json").unwrap();
        let ids: Vec<&str> = imp.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["star/a"]);
        assert_eq!(imp.skipped_bad_id, 2);
        assert_eq!(imp.notes.len(), 2, "{:?}", imp.notes);
        assert!(
            imp.notes[1].starts_with("reg.json: model id 'star/*' ends in '*'")
                && imp.notes[1].contains("skipped"),
            "{:?}",
            imp.notes
        );
        assert!(imp.notes[0].starts_with("reg.json: model id '*' ends in '*'"));
    }

    /// Tester 18 F4: the input window was cut at a price break from the key's name alone:
    /// a price no higher (0 and 0), a cheaper one, null or a word all cut it, and a break at
    /// 0k budgeted the model at 0 input tokens. The above-price is read as every price is,
    /// and only a higher one cuts; a break at 0 is no cut.
    #[test]
    fn a_price_break_cuts_the_window_only_where_the_price_above_it_is_higher() {
        let entry = |above: &str| {
            format!(
                r#"{{"max_input_tokens": 128000, "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, {above}}}"#
            )
        };
        let text = format!(
            r#"{{"h/higher": {}, "h/same": {}, "h/cheaper": {}, "h/null": {}, "h/break0": {}, "h/word": {}, "h/two": {}}}"#,
            entry(r#""input_cost_per_token_above_64k_tokens": 6e-06"#),
            entry(r#""input_cost_per_token_above_64k_tokens": "3e-06""#),
            entry(r#""input_cost_per_token_above_64k_tokens": 1e-06"#),
            entry(r#""input_cost_per_token_above_1k_tokens": null"#),
            entry(r#""input_cost_per_token_above_0k_tokens": 6e-06"#),
            entry(r#""input_cost_per_token_above_2k_tokens": "lots""#),
            entry(
                r#""input_cost_per_token_above_32k_tokens": 3e-06, "input_cost_per_token_above_100k_tokens": 9e-06"#
            ),
        );
        let imp = parse_registry(&text, "reg.json").unwrap();
        assert_eq!(
            windows(&imp),
            [
                ("h/break0", 128_000),
                ("h/cheaper", 128_000),
                ("h/higher", 64_000),
                ("h/null", 128_000),
                ("h/same", 128_000),
                ("h/two", 100_000),
            ]
        );
        let higher = imp.rows.iter().find(|r| r.id == "h/higher").unwrap();
        assert!(
            higher.source.contains("priced higher above 64000"),
            "{}",
            higher.source
        );
        assert_eq!(imp.skipped_bad_value, 1);
        assert_eq!(
            imp.notes,
            [
                r#"reg.json: ["h/word"] skipped, the rest read: input_cost_per_token_above_2k_tokens is "lots", not a number"#
            ]
        );
    }

    #[test]
    fn a_price_break_beyond_usize_is_no_break_not_an_overflow() {
        let text = r#"{"m": {"max_input_tokens": 128000, "input_cost_per_token_above_18446744073709551615k_tokens": 1e-6, "input_cost_per_token_above_18446744073709551k_tokens": 1e-6}}"#;
        let imp = parse_registry(text, "reg.json").unwrap();
        assert_eq!(imp.rows[0].input_tokens, 128_000);
    }

    #[test]
    fn not_an_object_is_a_clear_error() {
        let err = parse_registry("[1,2]", "reg.json").unwrap_err().to_string();
        assert!(
            err.contains("reg.json") && err.contains("not a LiteLLM registry"),
            "{err}"
        );
        let err = parse_registry("{\"a\": {\"max_tokens\": 1,", "reg.json")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("reg.json: line 1, column"), "{err}");
    }
}
