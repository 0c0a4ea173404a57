//! LiteLLM's `model_prices_and_context_window.json` as a budgets layer.
//!
//! Mapping: `max_input_tokens` (else legacy `max_tokens`) → input, `max_output_tokens` (else
//! `max_tokens`) → output, `*_cost_per_token` × 10⁶ → prices per million,
//! `supports_prompt_caching` → prefix_cache, `supports_reasoning` → hybrid_reasoning,
//! `supports_response_schema` → strict_json. Unknown fields are ignored; `sample_spec` and
//! models that are not chat/completion/responses models are skipped.
//!
//! Numbers go through [`crate::core::bounds`]: a negative, infinite or absurd window or
//! price is an error naming the file, the model and the field. A number written as a
//! string (`"max_input_tokens": "128000"`) is read when it parses cleanly; otherwise the
//! field is left out and a note names the model, the field and the value.
//!
//! When a model is priced higher above some input size (`input_cost_per_token_above_200k_tokens`),
//! the budget's input ceiling is that size: the advertised window beyond it is a premium tier,
//! not a safe default. The row's source says so.
//!
//! The tier is derived, provisionally, and marked as derived:
//! - C: free (`:free` / `/free` ids, or an input price of 0), or an input window under 32K;
//! - A: input priced at $1 or more per million tokens and function calling supported;
//! - B: everything else.

use regex::Regex;
use serde_json::{Map, Value};
use std::ops::RangeInclusive;
use std::sync::LazyLock;

use crate::core::bounds::{self, finite_in};
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
    /// ([`model_id_problem`](crate::core::budget::model_id_problem)), each also said in a
    /// note: such an id would be sent, budgeted and stored as read, and the store's own
    /// export could not be imported back.
    pub skipped_bad_id: usize,
    /// Fields that were there but could not be read (a number written as a word), each
    /// naming the model and the field.
    pub notes: Vec<String>,
}

static PRICE_BREAK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^input_cost_per_token_above_(\d+)k_tokens$").expect("constant regex")
});

/// Windows, in tokens.
const WINDOW: RangeInclusive<f64> = 0.0..=*bounds::TOKENS.end() as f64;
/// Prices, in USD per token (the registry's unit).
const PRICE_PER_TOKEN: RangeInclusive<f64> = 0.0..=*bounds::PRICE_PER_MILLION.end() / 1e6;

/// One model's entry as it is read: where errors and notes go.
struct EntryReader<'a> {
    entry: &'a Map<String, Value>,
    id: &'a str,
    origin: &'a str,
    notes: &'a mut Vec<String>,
}

impl EntryReader<'_> {
    /// A number field: a JSON number, or a string that parses cleanly as one, checked
    /// finite and in `range`. Absent or null is `None`; anything else that is not a number
    /// is `None` with a note.
    fn number(&mut self, key: &str, range: &RangeInclusive<f64>) -> Result<Option<f64>, CoreError> {
        let field = format!("[\"{}\"].{key}", self.id);
        let n = match self.entry.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match n {
            Some(n) => finite_in(n, range, self.origin, &field).map(Some),
            None => {
                let value = self
                    .entry
                    .get(key)
                    .map(Value::to_string)
                    .unwrap_or_default();
                let shown: String = value.chars().take(40).collect();
                self.notes.push(format!(
                    "{}: {field} is {shown}, not a number: left out",
                    self.origin
                ));
                Ok(None)
            }
        }
    }
}

impl EntryReader<'_> {
    /// A token count: a [`number`](Self::number) that is also whole (`128000.5` tokens is a
    /// broken entry, not 128,000).
    fn count(&mut self, key: &str, range: &RangeInclusive<f64>) -> Result<Option<f64>, CoreError> {
        let n = self.number(key, range)?;
        match n {
            Some(v) if v.fract() != 0.0 => Err(CoreError::Field {
                origin: self.origin.to_string(),
                field: format!("[\"{}\"].{key}", self.id),
                problem: format!("is {v}, not a whole number of tokens"),
            }),
            _ => Ok(n),
        }
    }
}

fn flag(entry: &Map<String, Value>, key: &str) -> bool {
    entry.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Parse a LiteLLM registry text. `origin` names the file in errors and in each row's source.
pub fn parse_registry(text: &str, origin: &str) -> Result<RegistryImport, CoreError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CoreError::json(origin, text, &e))?;
    let Value::Object(models) = value else {
        return Err(CoreError::Content {
            origin: origin.to_string(),
            message: "not a LiteLLM registry: expected a JSON object of model id → fields".into(),
        });
    };
    let mut out = RegistryImport {
        rows: Vec::new(),
        skipped_not_chat: 0,
        skipped_no_window: 0,
        skipped_bad_id: 0,
        notes: Vec::new(),
    };
    for (id, entry) in &models {
        if id == "sample_spec" {
            continue;
        }
        if let Some(problem) = crate::core::budget::model_id_problem(id) {
            out.skipped_bad_id += 1;
            out.notes.push(format!(
                "{origin}: model id {} {problem}: skipped, as --model and budgets.toml refuse such an id",
                crate::core::terminal_text::quoted(id)
            ));
            continue;
        }
        let Value::Object(entry) = entry else {
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: id.clone(),
                problem: "is not an object".into(),
            });
        };
        let mode = entry.get("mode").and_then(Value::as_str).unwrap_or("chat");
        if !CHAT_MODES.contains(&mode) {
            out.skipped_not_chat += 1;
            continue;
        }
        let mut reader = EntryReader {
            entry,
            id,
            origin,
            notes: &mut out.notes,
        };
        match row_from_entry(&mut reader)? {
            Some(row) => out.rows.push(row),
            None => out.skipped_no_window += 1,
        }
    }
    Ok(out)
}

fn row_from_entry(r: &mut EntryReader) -> Result<Option<BudgetRow>, CoreError> {
    let (id, entry, origin) = (r.id, r.entry, r.origin);
    let mut notes: Vec<String> = Vec::new();
    let legacy = r.count("max_tokens", &WINDOW)?;
    let max_input = r.count("max_input_tokens", &WINDOW)?;
    let max_output = r.count("max_output_tokens", &WINDOW)?;
    // Every number is read before a missing window skips the entry, so each bad one is
    // reported.
    let mut per_million = |key: &str| -> Result<f64, CoreError> {
        Ok(r.number(key, &PRICE_PER_TOKEN)?
            .map(|p| round6(p * 1e6))
            .unwrap_or(0.0))
    };
    let prices = Prices {
        input: per_million("input_cost_per_token")?,
        cached_input: per_million("cache_read_input_token_cost")?,
        output: per_million("output_cost_per_token")?,
    };
    let advertised = match max_input {
        Some(n) => n as usize,
        None => {
            let Some(n) = legacy else {
                return Ok(None);
            };
            notes.push("no max_input_tokens: used legacy max_tokens".into());
            n as usize
        }
    };
    let output = match max_output.or(legacy) {
        Some(n) => n as usize,
        None => {
            notes.push("no output window: assumed 4096".into());
            4096
        }
    };
    let price_break = entry
        .keys()
        .filter_map(|k| {
            PRICE_BREAK
                .captures(k)
                .and_then(|c| c[1].parse::<usize>().ok())
                .and_then(|k| k.checked_mul(1000))
        })
        .min();
    let input = match price_break {
        Some(limit) if limit < advertised => {
            notes.push(format!(
                "advertised {advertised} tokens, priced higher above {limit}: budget uses {limit}"
            ));
            limit
        }
        _ => advertised,
    };
    let function_calling = flag(entry, "supports_function_calling");
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
        hybrid_reasoning: flag(entry, "supports_reasoning"),
        strict_json: flag(entry, "supports_response_schema"),
        prefix_cache: flag(entry, "supports_prompt_caching"),
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
    Ok(Some(row))
}

/// Prices like 3e-06 × 1e6 come out as 2.9999999999999996; six decimals is plenty.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn numbers_as_strings_are_read_or_noted_and_bad_numbers_refused() {
        let text = r#"{
            "s/read": {"max_input_tokens": " 128000 ", "max_output_tokens": "8192", "input_cost_per_token": "3e-06", "mode": "chat"},
            "s/word": {"max_input_tokens": "lots", "max_output_tokens": 4096, "output_cost_per_token": [1], "mode": "chat"}
        }"#;
        let imp = parse_registry(text, "reg.json").unwrap();
        let read = imp.rows.iter().find(|r| r.id == "s/read").unwrap();
        assert_eq!((read.input_tokens, read.output_tokens), (128_000, 8192));
        assert_eq!(read.prices.input, 3.0);
        assert_eq!(imp.skipped_no_window, 1, "s/word has no readable window");
        assert_eq!(imp.notes.len(), 2, "{:?}", imp.notes);
        assert!(
            imp.notes[0].contains(r#"["s/word"].max_input_tokens is "lots""#),
            "{:?}",
            imp.notes
        );
        for (entry, field, says) in [
            (r#"{"max_input_tokens": -1}"#, "max_input_tokens", "is -1"),
            (
                r#"{"max_input_tokens": 128000.5}"#,
                "max_input_tokens",
                "is 128000.5, not a whole number",
            ),
            (
                r#"{"max_input_tokens": 1e300}"#,
                "max_input_tokens",
                "is 1e300;",
            ),
            (
                r#"{"max_input_tokens": "NaN"}"#,
                "max_input_tokens",
                "is NaN",
            ),
            (
                r#"{"max_input_tokens": "inf"}"#,
                "max_input_tokens",
                "is infinite",
            ),
            (
                r#"{"max_input_tokens": 1000, "output_cost_per_token": -1e-6}"#,
                "output_cost_per_token",
                "is -0.000001",
            ),
            (
                r#"{"max_input_tokens": 1000, "input_cost_per_token": 5.0}"#,
                "input_cost_per_token",
                "is 5",
            ),
        ] {
            let err = parse_registry(&format!(r#"{{"m/x": {entry}}}"#), "reg.json")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!(r#"reg.json: field '["m/x"].{field}' {says}"#)),
                "{entry}: {err}"
            );
        }
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
