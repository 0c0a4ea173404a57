//! The one check every number read from a file goes through: finite (TOML writes `nan`
//! and `inf` as plainly as `1.5`) and inside the range the field documents. A failure is a
//! [`CoreError::Field`] naming the file and the field, so each parser reports it the same
//! way and nothing is clamped or used silently.

use std::fmt::Display;
use std::ops::RangeInclusive;

use crate::core::error::CoreError;

/// Token windows: no model reads more than this many tokens (10× the largest window
/// published today).
pub const TOKENS: RangeInclusive<usize> = 0..=100_000_000;
/// Prices in USD per million tokens.
pub const PRICE_PER_MILLION: RangeInclusive<f64> = 0.0..=1_000_000.0;
/// A catalog byte cap.
pub const CATALOG_BYTES: RangeInclusive<usize> = 0..=1 << 30;
/// Planner pattern and signal weights: negative weights are counter-evidence (a greeting
/// followed by a request is not casual).
pub const WEIGHT: RangeInclusive<f64> = -1_000.0..=1_000.0;
/// Planner thresholds: a category fires at or above its threshold.
pub const THRESHOLD: RangeInclusive<f64> = 0.0..=1_000.0;
/// Character counts in the planner rules (`short_chars`, `complex_threshold`).
pub const CHARS: RangeInclusive<usize> = 0..=100_000_000;
/// The ranker's best entries the planner keeps whatever category fired (planner.toml
/// `keep_ranked_top`); 0 keeps none.
pub const RANKED_KEPT: RangeInclusive<usize> = 0..=100;
/// Plan history timestamps: 1970-01-01 to 9999-12-31, Unix seconds.
pub const TIMESTAMP: RangeInclusive<i64> = 0..=253_402_300_799;
/// A plan's recorded duration in milliseconds: at most a week (longer than the longest
/// timeout times the most retries `config.toml` allows).
/// A stored plan's intent, in bytes: 1 MiB. An instruction may be a huge paste (the gate
/// briefs it for the model), but the history keeps only its opening: an unbounded intent
/// made every view of the plans that hold it slow and an MCP resource tens of MB.
pub const INTENT_BYTES: usize = 1 << 20;

/// The most steps one plan holds — its own, or its expert baseline's (outside tester F12: a
/// 3,000,000-step baseline took 3 GB to import and again to export). A model's answer with
/// more is no plan; an import line with more is refused, naming the line and the field,
/// before the rest is read. Real plans have a handful; 10,000 steps is about a 1 MB answer.
pub const PLAN_STEPS: usize = 10_000;

/// How deep a step's args may nest (brackets within brackets). A plan is stored and later
/// exported as one JSON line with its args three levels in, and every JSON reader here takes
/// 127 levels: a model's answer whose args nested 125 deep was stored, and the store's own
/// export then could not be imported back (outside tester 7 T7-4). Real args nest a few
/// levels; an answer nesting deeper is no plan.
pub const STEP_ARGS_DEPTH: usize = 100;

/// How deep a step's `args` nest, when past [`STEP_ARGS_DEPTH`], and the bound, in the words
/// every reader of a plan says it ("126 levels deep; a plan's args nest at most 100", after
/// "args nest" or "field 'steps[].args' nests"): a model's answer (no plan) and an imported
/// line (refused) alike.
pub fn step_args_too_deep(args: &serde_json::Value) -> Option<String> {
    let depth = json_depth(args);
    (depth > STEP_ARGS_DEPTH)
        .then(|| format!("{depth} levels deep; a plan's args nest at most {STEP_ARGS_DEPTH}"))
}

/// How deep `value` nests: 0 for a scalar, 1 for `[]` or `{"a": 1}`. Walked without
/// recursion, so any value serde_json built is measured.
pub fn json_depth(value: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
            serde_json::Value::Array(a) => Box::new(a.iter()),
            serde_json::Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        deepest = deepest.max(depth + 1);
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    deepest
}

/// The most bytes one name holds — a model id, a caller, a tool, a plan id — under the one
/// name rule (`name_problem`, beside the budget rows), at every door: imports,
/// `--model`, `--caller`, budgets.toml, registry keys, MCP arguments (outside tester 5: an
/// 8 MiB tool name imported and printed whole on one line of `history --gaps`). The longest
/// name in the real catalogs the tests carry (BFCL, NESTFUL, LiteLLM's registry, MCP servers)
/// is 76 bytes.
pub const NAME_BYTES: usize = 512;

/// An intent as the history keeps it: whole up to [`INTENT_BYTES`], else its opening (cut
/// at a character) and how many bytes were left out, within the bound. The same text
/// always gives the same kept intent, so an import of it twice is one plan.
pub fn kept_intent(text: &str) -> std::borrow::Cow<'_, str> {
    opening_of(text, INTENT_BYTES, 64, "more bytes not kept")
}

/// `text` whole up to `bound` bytes, else its first `bound − room` bytes (cut at a character)
/// and `… [N <rest>]` for the N bytes left out, within `bound`.
fn opening_of<'a>(
    text: &'a str,
    bound: usize,
    room: usize,
    rest: &str,
) -> std::borrow::Cow<'a, str> {
    if text.len() <= bound {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = bound - room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{} … [{} {rest}]", &text[..end], text.len() - end))
}

/// The most bytes of an intent a listing of many plans shows (`my-plans`): the opening the
/// history prior reads too. A pasted prompt of 1 MiB listed whole made a caller's plans one
/// answer over the 6 MiB an MCP answer may take (tester 8 F19).
pub const LISTED_INTENT_BYTES: usize = 1024;

/// An intent as a listing shows it: whole up to [`LISTED_INTENT_BYTES`], else its opening
/// (cut at a character) and how many bytes follow, with where to read it whole.
pub fn listed_intent(text: &str) -> std::borrow::Cow<'_, str> {
    opening_of(
        text,
        LISTED_INTENT_BYTES,
        96,
        "more bytes; `history show ID` gives the plan whole",
    )
}

pub const DURATION_MS: RangeInclusive<i64> = 0..=604_800_000;
/// `llm.retries`.
pub const RETRIES: RangeInclusive<u32> = 0..=20;
/// `llm.concurrency`: at least one request in flight; more than 16 at once is a flood, not
/// a comparison.
pub const CONCURRENCY: RangeInclusive<u32> = 1..=16;
/// `llm.max_reply_bytes`: a chat completion's envelope alone takes hundreds of bytes; more
/// than 256 MiB of reply is no plan — and a reply kept must be one an import of its plan
/// takes back ([`PLAN_TEXT_BYTES`]; SQLite refuses a value over 10^9 bytes).
pub const REPLY_BYTES: RangeInclusive<u64> = 1024..=PLAN_TEXT_BYTES as u64;
/// The most a plan keeps of one text an import brings — its raw response, its kept answer
/// written as JSON — the largest reply a live call keeps (tester 13 T13-12: 300 MiB was
/// taken at 1.25 GB of memory, and past SQLite's limit the error named neither line nor
/// field).
pub const PLAN_TEXT_BYTES: usize = 1 << 28;

/// `[cache] max_bytes`: the paste content the output cache holds before storing evicts the
/// least recently stored (tester 21 F5: nothing bounded it, and an MCP client filled the
/// disk the history store shares). At least 1 MiB, at most 1 TiB.
pub const CACHE_BYTES: RangeInclusive<u64> = 1 << 20..=1 << 40;
/// `[cache] max_bytes` when not set: 1 GiB.
pub const CACHE_BYTES_DEFAULT: u64 = 1 << 30;

/// `temperature` in a budgets row: the range OpenAI-compatible servers accept.
pub const TEMPERATURE: RangeInclusive<f64> = 0.0..=2.0;
/// `top_p` in a budgets row.
pub const TOP_P: RangeInclusive<f64> = 0.0..=1.0;
/// `seed` in a budgets row: a whole number JSON carries exactly.
pub const SEED: RangeInclusive<i64> = 0..=9_007_199_254_740_991;
/// Characters of a History intent search (`history --intent`, `/` in the console): longer
/// than any intent anyone types to find one, short enough that every search stays a plain
/// substring scan.
pub const INTENT_SEARCH_CHARS: RangeInclusive<usize> = 1..=500;
/// How many `stop` sequences a row may send (OpenAI's limit).
pub const STOP_SEQUENCES: RangeInclusive<usize> = 0..=4;
/// Bytes of one `stop` sequence.
pub const STOP_BYTES: RangeInclusive<usize> = 1..=256;
/// `max_tokens` sent: at least one token.
pub const MAX_TOKENS: RangeInclusive<usize> = 1..=100_000_000;
/// Plans `dev gen-history --plans` writes: ten times the largest store the benches generate
/// (1,000,000 plans, 1.2 GB); any count was taken, and 2^64 − 1 wrote until the disk was
/// full (tester 50 F17).
pub const GENERATED_PLANS: RangeInclusive<usize> = 0..=10_000_000;

/// The sizes in a local semantic model's BERT `config.json`: at least one of each (candle
/// divides by the heads: 0 panicked, tester 16 F1), and far above any published BERT
/// (BERT-large: 24 layers, 16 heads, hidden 1,024, intermediate 4,096, 512 positions;
/// multilingual vocabularies about 250,000 tokens). The weights must match them anyway;
/// the upper bounds only keep a typo from being multiplied into a size.
pub const BERT_LAYERS: RangeInclusive<usize> = 1..=1_024;
/// `num_attention_heads`; `hidden_size` must also be a multiple of it.
pub const BERT_HEADS: RangeInclusive<usize> = 1..=1_024;
/// `hidden_size`.
pub const BERT_HIDDEN: RangeInclusive<usize> = 1..=65_536;
/// `intermediate_size`.
pub const BERT_INTERMEDIATE: RangeInclusive<usize> = 1..=262_144;
/// `max_position_embeddings`: the most tokens one text may have.
pub const BERT_POSITIONS: RangeInclusive<usize> = 1..=1_048_576;
/// `vocab_size`.
pub const BERT_VOCAB: RangeInclusive<usize> = 1..=10_000_000;
/// `type_vocab_size` (segment ids: 2 in every BERT).
pub const BERT_TYPE_VOCAB: RangeInclusive<usize> = 1..=1_024;
/// `layer_norm_eps`.
pub const BERT_LAYER_NORM_EPS: RangeInclusive<f64> = 0.0..=1.0;

fn field_error(origin: &str, field: &str, problem: String) -> CoreError {
    CoreError::Field {
        origin: origin.to_string(),
        field: field.to_string(),
        problem,
    }
}

/// `value` if it is finite and inside `range`; else an error naming `origin` and `field`.
pub fn finite_in(
    value: f64,
    range: &RangeInclusive<f64>,
    origin: &str,
    field: &str,
) -> Result<f64, CoreError> {
    let expected = format!("a number from {} to {}", range.start(), range.end());
    if value.is_nan() {
        return Err(field_error(
            origin,
            field,
            format!("is NaN; expected {expected}"),
        ));
    }
    if value.is_infinite() {
        return Err(field_error(
            origin,
            field,
            format!("is infinite; expected {expected}"),
        ));
    }
    if !range.contains(&value) {
        return Err(field_error(
            origin,
            field,
            not_a_number_in(&number_text(value), range),
        ));
    }
    Ok(value)
}

/// What a number field says when `found` (a value as written, or as [`number_text`] says
/// it) is not a number in `range`: the problem part of [`CoreError::Field`].
pub fn not_a_number_in<T: Display>(found: &str, range: &RangeInclusive<T>) -> String {
    format!(
        "is {found}; expected a number from {} to {}",
        range.start(),
        range.end()
    )
}

/// A number as a person reads it: `1e308`, not 309 digits; `0.25` as it is.
pub fn number_text(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// `value` if it is inside `range`; else an error naming `origin` and `field`.
pub fn int_in<T: PartialOrd + Display + Copy>(
    value: T,
    range: &RangeInclusive<T>,
    origin: &str,
    field: &str,
) -> Result<T, CoreError> {
    int_in_written(value, value, range, origin, field)
}

/// As [`int_in`], the value said as the file wrote it (`written`): a number read into
/// `value` with loss (`1e308` taken as the largest count) is refused as `1e308`, not as
/// what it became (tester 23 F10).
pub fn int_in_written<T: PartialOrd + Display + Copy>(
    value: T,
    written: impl Display,
    range: &RangeInclusive<T>,
    origin: &str,
    field: &str,
) -> Result<T, CoreError> {
    if range.contains(&value) {
        return Ok(value);
    }
    Err(field_error(
        origin,
        field,
        not_a_whole_number_in(&written.to_string(), range),
    ))
}

/// A whole number of a TOML file read against its key's bound: a value of another type,
/// fractional, negative or out of range fails here, where the parser still knows its line,
/// as `field 'llm.concurrency' is string "4"; expected a whole number from 1 to 16` (serde's
/// own message would say only "expected u32", and a type error "of 0 or more" beside a range
/// error "from 0 to 100000000" gave one key two bounds: tester 9 T9-12). The one reader of
/// config.toml's whole numbers and budgets.toml's token counts.
pub fn whole_number<'de, D, T>(d: D, range: &RangeInclusive<T>, key: &str) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64> + PartialOrd + Display + Copy,
{
    use serde::Deserialize;
    // A value that cannot be read — a number past what TOML holds (2^63 and up; a float
    // past f64), alone or in a table or array given instead — is still this key's: said
    // against its bound, as the file writes it (the parser alone has that text).
    let Ok(value) = toml::Value::deserialize(d) else {
        return Err(serde::de::Error::custom(format!(
            "field '{key}' {}",
            not_a_whole_number_in(crate::core::error::TOML_AS_WRITTEN, range)
        )));
    };
    let found = match &value {
        toml::Value::Integer(n) => match T::try_from(*n) {
            Ok(v) if range.contains(&v) => return Ok(v),
            _ => n.to_string(),
        },
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::String(s) => {
            format!("string {}", crate::core::terminal_text::quoted_with(s, '"'))
        }
        toml::Value::Datetime(t) => format!("the date {t}"),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    };
    Err(serde::de::Error::custom(format!(
        "field '{key}' {}",
        not_a_whole_number_in(&found, range)
    )))
}

/// What a whole-number field says when `found` (a value, or a description of one: `string
/// "4"`) is not a whole number in `range`: the problem part of [`CoreError::Field`].
pub fn not_a_whole_number_in<T: Display>(found: &str, range: &RangeInclusive<T>) -> String {
    format!(
        "is {found}; expected a whole number from {} to {}",
        range.start(),
        range.end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_depth_counts_brackets_within_brackets() {
        use serde_json::json;
        assert_eq!(json_depth(&json!(1)), 0);
        assert_eq!(json_depth(&json!([])), 1);
        assert_eq!(json_depth(&json!({"a": [1, {"b": []}]})), 4);
    }

    #[test]
    fn a_huge_intent_is_kept_to_the_bound_cut_at_a_character() {
        let text = "日".repeat(INTENT_BYTES);
        let kept = kept_intent(&text);
        assert!(kept.len() <= INTENT_BYTES, "{}", kept.len());
        assert!(kept.ends_with("more bytes not kept]"));
        assert_eq!(
            kept_intent(&text),
            kept,
            "the same text, the same kept intent"
        );
        assert_eq!(kept_intent("hi there"), "hi there");
    }

    #[test]
    fn a_listed_intent_is_its_opening_within_the_bound() {
        assert_eq!(listed_intent("short"), "short");
        let exact = "a".repeat(LISTED_INTENT_BYTES);
        assert_eq!(listed_intent(&exact), exact);
        let long = "é".repeat(LISTED_INTENT_BYTES);
        let shown = listed_intent(&long);
        assert!(shown.len() <= LISTED_INTENT_BYTES, "{}", shown.len());
        assert!(shown.starts_with("éé"));
        assert!(shown.ends_with(&format!(
            "[{} more bytes; `history show ID` gives the plan whole]",
            long.len() - (LISTED_INTENT_BYTES - 96)
        )));
    }

    #[test]
    fn a_huge_or_tiny_number_is_said_as_written() {
        assert_eq!(number_text(1e308), "1e308");
        assert_eq!(number_text(-2.5e20), "-2.5e20");
        assert_eq!(number_text(1e-9), "1e-9");
        assert_eq!(number_text(0.25), "0.25");
        assert_eq!(number_text(0.0), "0");
        let e = finite_in(1e308, &(0.0..=1000.0), "budgets.toml", "x").unwrap_err();
        assert!(e.to_string().contains("is 1e308;"), "{e}");
    }

    #[test]
    fn nan_infinity_and_out_of_range_name_file_and_field() {
        for (v, says) in [
            (f64::NAN, "is NaN"),
            (f64::INFINITY, "is infinite"),
            (f64::NEG_INFINITY, "is infinite"),
            (-0.5, "is -0.5"),
            (2e6, "is 2000000"),
        ] {
            let err = finite_in(
                v,
                &PRICE_PER_MILLION,
                "budgets.toml",
                "model[0].prices.input",
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.starts_with("budgets.toml: field 'model[0].prices.input' ")
                    && err.contains(says),
                "{err}"
            );
        }
        assert_eq!(finite_in(3.0, &PRICE_PER_MILLION, "f", "x"), Ok(3.0));
        assert_eq!(finite_in(-3.0, &WEIGHT, "f", "x"), Ok(-3.0));
        assert!(finite_in(-0.1, &THRESHOLD, "f", "x").is_err());
        assert_eq!(int_in(5u32, &RETRIES, "f", "x"), Ok(5));
        let err = int_in(-1i64, &DURATION_MS, "plans.jsonl: line 2", "duration_ms")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "plans.jsonl: line 2: field 'duration_ms' is -1; expected a whole number from 0 to 604800000"
        );
    }
}
