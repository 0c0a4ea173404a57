//! Prompt assembly (DESIGN §2.9): the request a planner call would send — messages, response
//! format, max_tokens — with every part counted, the prefix-cache split and the cost.

use serde::Serialize;

use crate::core::budget::{BudgetRow, Tier};
use crate::core::prompt::{CATALOG_LABEL, TOKENS_PER_MESSAGE, TOKENS_REPLY_PRIMING, system_prompt};
use crate::core::tokens;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    pub role: &'static str,
    pub content: String,
}

/// One part of the request, counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestPart {
    /// `system prompt`, `catalog`, `defaults`, `hint`, `prior`, `intent`, `context`,
    /// `attachment`.
    pub part: &'static str,
    /// Which message carries it.
    pub role: &'static str,
    pub bytes: usize,
    pub tokens: usize,
    /// The attachment's name, for an `attachment` part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Cost of one call in USD, from the row's prices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CallCost {
    /// Every input token at the full price.
    pub input_uncached: f64,
    /// The cacheable prefix at the cached price, the rest at the full price.
    pub input_cached: f64,
    /// If the reply uses all of `max_tokens`.
    pub output_max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssembledRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// `json_object` only for strict-JSON rows that are not Tier C.
    pub response_format: Option<&'static str>,
    pub max_tokens: usize,
    /// The row's sampling, sent beside `max_tokens` (unset fields are not sent).
    pub sampling: crate::core::budget::Sampling,
    pub parts: Vec<RequestPart>,
    /// Per-message and reply-priming tokens of the chat format.
    pub framing_tokens: usize,
    pub input_tokens: usize,
    /// The request's input by part (system, prompt, attachments, catalog, framing), adding
    /// up to `input_tokens`: the figures every surface shows.
    pub totals: PartTotals,
    pub exact: bool,
    /// The catalog rides in the system prompt, byte-identical across calls.
    pub prefix_cache: bool,
    /// Tokens of the stable prefix (the whole system message) when the provider caches it.
    pub cacheable_tokens: usize,
    /// Why the prefix does or does not cache.
    pub cache_note: String,
    pub cost: CallCost,
}

/// The part the catalog rides in, its header line (`CATALOG (routing guide):`) included.
pub const CATALOG_PART: &str = "catalog";

/// The parts of the instruction: the caller's defaults, the planner's hint, the past-plans
/// prior and the instruction itself.
pub const PROMPT_PARTS: [&str; 4] = ["defaults", "hint", "prior", "intent"];

/// The parts sent beside the instruction: a pasted instruction's briefing and the
/// attachments.
pub const ATTACHMENT_PARTS: [&str; 2] = ["context", "attachment"];

/// The request's input by part, counted once here: `preview` (text and `--json`),
/// `compact` (text and `--json`), the console's panes and the MCP tools all show these.
/// The parts add up to `total`, the request's input tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PartTotals {
    /// The system prompt.
    pub system: usize,
    /// The instruction with the defaults, the hint and the past-plans prior
    /// ([`PROMPT_PARTS`]).
    pub prompt: usize,
    /// Attachments and a pasted instruction's briefing, as sent ([`ATTACHMENT_PARTS`]).
    pub attachments: usize,
    /// The catalog part as the model receives it, its header line included.
    pub catalog: usize,
    /// What the parts leave of the request's count: the chat format's per-message and
    /// reply-priming tokens and the blank lines between parts.
    pub framing: usize,
    /// The request's input tokens.
    pub total: usize,
}

impl PartTotals {
    /// From the counted parts and the request's whole input (framing included).
    pub fn of(parts: &[RequestPart], total: usize) -> PartTotals {
        let sum = |names: &[&str]| -> usize {
            parts
                .iter()
                .filter(|p| names.contains(&p.part))
                .map(|p| p.tokens)
                .sum()
        };
        let system = sum(&[SYSTEM_PART]);
        let prompt = sum(&PROMPT_PARTS);
        let attachments = sum(&ATTACHMENT_PARTS);
        let catalog = sum(&[CATALOG_PART]);
        PartTotals {
            system,
            prompt,
            attachments,
            catalog,
            framing: total.saturating_sub(system + prompt + attachments + catalog),
            total,
        }
    }
}

/// The system prompt's part.
pub const SYSTEM_PART: &str = "system prompt";

impl AssembledRequest {
    /// The catalog as the model receives it, header line included, counted once here: the
    /// figure the Preview, `preview --json` and the Catalog pane all show.
    pub fn catalog_part(&self) -> Option<&RequestPart> {
        self.parts.iter().find(|p| p.part == CATALOG_PART)
    }
}

/// An attachment as it is sent: its text whole, or its briefing.
#[derive(Debug, Clone, Copy)]
pub struct AttachedText<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// What goes into one planner call.
pub struct RequestInputs<'a> {
    pub model: &'a str,
    pub row: &'a BudgetRow,
    /// The compacted catalog text, as sent.
    pub catalog: &'a str,
    /// The caller's defaults block (may be empty).
    pub defaults: &'a str,
    /// The planner's hint line, if annotation is on.
    pub hint: Option<&'a str>,
    /// Steps past plans produced for similar intents (`core::past_steps`), if any.
    pub prior: Option<&'a str>,
    pub intent: &'a str,
    /// Pasted context, or its briefing.
    pub context: Option<&'a str>,
    /// Files sent beside the instruction, each after it in its own block.
    pub attachments: &'a [AttachedText<'a>],
}

pub fn assemble(inp: &RequestInputs) -> AssembledRequest {
    let row = inp.row;
    let tok = row.tokenizer;
    let count = |s: &str| tokens::count(tok, s).tokens;
    let sys = system_prompt(row.prompt_variant);
    let catalog_block = format!("{CATALOG_LABEL}{}", inp.catalog);
    let catalog_role = if row.prefix_cache { "system" } else { "user" };

    let mut parts = vec![RequestPart {
        part: SYSTEM_PART,
        role: "system",
        bytes: sys.len(),
        tokens: count(sys),
        name: None,
    }];
    parts.push(RequestPart {
        part: CATALOG_PART,
        role: catalog_role,
        bytes: catalog_block.len(),
        tokens: count(&catalog_block),
        name: None,
    });
    let mut user_pieces: Vec<(&'static str, Option<&str>, String)> = Vec::new();
    if !inp.defaults.is_empty() {
        user_pieces.push(("defaults", None, format!("DEFAULTS:\n{}", inp.defaults)));
    }
    if let Some(h) = inp.hint {
        user_pieces.push(("hint", None, h.to_string()));
    }
    if let Some(p) = inp.prior {
        user_pieces.push(("prior", None, p.to_string()));
    }
    user_pieces.push(("intent", None, format!("REQUEST:\n{}", inp.intent)));
    if let Some(c) = inp.context {
        user_pieces.push(("context", None, format!("CONTEXT:\n{c}")));
    }
    for a in inp.attachments {
        user_pieces.push((
            "attachment",
            Some(a.name),
            // The name is one line, whatever the file is called: a name holding line breaks
            // must not close the header and open a section of its own ("REQUEST: …").
            format!(
                "ATTACHMENT {}:\n{}",
                crate::core::terminal_text::for_terminal_line(a.name),
                a.text
            ),
        ));
    }
    for (part, name, text) in &user_pieces {
        parts.push(RequestPart {
            part,
            role: "user",
            bytes: text.len(),
            tokens: count(text),
            name: name.map(str::to_string),
        });
    }
    let user_tail = user_pieces
        .iter()
        .map(|(_, _, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let (system, user) = if row.prefix_cache {
        (format!("{sys}\n\n{catalog_block}"), user_tail)
    } else {
        (sys.to_string(), format!("{catalog_block}\n\n{user_tail}"))
    };
    let framing_tokens = 2 * TOKENS_PER_MESSAGE + TOKENS_REPLY_PRIMING;
    let system_tokens = count(&system);
    let input_tokens = system_tokens + count(&user) + framing_tokens;

    let min = row.prompt_cache_min_tokens.unwrap_or(1024);
    let (cacheable_tokens, cache_note) = if !row.prefix_cache {
        (
            0,
            "no prefix cache for this row: the catalog rides in the user message".to_string(),
        )
    } else if system_tokens < min {
        (
            0,
            format!(
                "system prefix is {system_tokens} tokens, under the provider's {min}-token minimum"
            ),
        )
    } else {
        (
            system_tokens + TOKENS_PER_MESSAGE,
            "system prompt + catalog is byte-identical across calls: cached after the first".into(),
        )
    };
    let per_token = |usd_per_m: f64| usd_per_m / 1_000_000.0;
    let p = &row.prices;
    let cost = CallCost {
        input_uncached: input_tokens as f64 * per_token(p.input),
        input_cached: cacheable_tokens as f64 * per_token(p.cached_input)
            + (input_tokens - cacheable_tokens) as f64 * per_token(p.input),
        output_max: row.output_tokens as f64 * per_token(p.output),
    };
    let totals = PartTotals::of(&parts, input_tokens);
    AssembledRequest {
        model: inp.model.to_string(),
        messages: vec![
            ChatMessage {
                role: "system",
                content: system,
            },
            ChatMessage {
                role: "user",
                content: user,
            },
        ],
        response_format: (row.strict_json && row.tier != Tier::C).then_some("json_object"),
        max_tokens: row.max_tokens.unwrap_or(row.output_tokens),
        sampling: row.sampling.clone(),
        parts,
        framing_tokens,
        input_tokens,
        totals,
        exact: tokens::count(tok, "").exact,
        prefix_cache: row.prefix_cache,
        cacheable_tokens,
        cache_note,
        cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::budget::Tokenizer;

    fn inputs<'a>(row: &'a BudgetRow, intent: &'a str) -> RequestInputs<'a> {
        RequestInputs {
            model: "m",
            row,
            catalog: "{\"packs\":[]}",
            defaults: "",
            hint: Some("[Context: general task | tools: 0/0 | thinking: low]"),
            prior: None,
            intent,
            context: None,
            attachments: &[],
        }
    }

    #[test]
    fn catalog_goes_to_the_system_prompt_only_for_prefix_cache_rows() {
        let mut row = BudgetRow::fallback();
        row.tokenizer = Tokenizer::O200k;
        let plain = assemble(&inputs(&row, "do a thing"));
        assert!(plain.messages[1].content.starts_with(CATALOG_LABEL));
        assert_eq!(plain.cacheable_tokens, 0);
        assert_eq!(plain.response_format, None);
        row.prefix_cache = true;
        row.prompt_cache_min_tokens = Some(10);
        row.tier = Tier::A;
        row.strict_json = true;
        let a = assemble(&inputs(&row, "do a thing"));
        let b = assemble(&inputs(&row, "something else entirely"));
        assert_eq!(
            a.messages[0].content, b.messages[0].content,
            "stable prefix"
        );
        assert!(a.messages[0].content.contains(CATALOG_LABEL));
        assert!(!a.messages[1].content.contains(CATALOG_LABEL));
        assert!(a.cacheable_tokens > 0);
        assert_eq!(a.response_format, Some("json_object"));
        assert_eq!(a.max_tokens, row.output_tokens);
        // Strict JSON is withheld from Tier C.
        row.tier = Tier::C;
        assert_eq!(assemble(&inputs(&row, "x")).response_format, None);
    }

    /// Tester 10 T10-21: the Catalog pane's figures are the catalog part's (header line
    /// included), and its allowance is in the same terms: a catalog that fits the allowance
    /// is a part that fits the part's allowance, and the framing left is the request's own.
    #[test]
    fn the_catalog_part_and_its_allowance_are_counted_in_the_same_terms() {
        for tokenizer in [Tokenizer::Estimate, Tokenizer::O200k, Tokenizer::Cl100k] {
            let mut row = BudgetRow::fallback();
            row.tokenizer = tokenizer;
            let r = assemble(&inputs(&row, "do a thing"));
            let part = r.catalog_part().expect("a catalog part");
            let body = tokens::count(tokenizer, "{\"packs\":[]}").tokens;
            let label = tokens::count(tokenizer, CATALOG_LABEL).tokens;
            assert!(part.tokens > body, "{tokenizer:?}: the header is counted");
            assert_eq!(part.bytes, CATALOG_LABEL.len() + "{\"packs\":[]}".len());
            let a = crate::core::prompt::catalog_allowance(&row, "", "do a thing");
            assert_eq!(a.framing_tokens, r.framing_tokens, "{tokenizer:?}");
            assert_eq!(a.catalog_header_tokens, label, "{tokenizer:?}");
            assert_eq!(a.allowance().tokens + label, a.tokens, "{tokenizer:?}");
            // A body of exactly the text's allowance: its part within the part's allowance.
            let text = a.allowance().tokens;
            let fill = "x".repeat(text.min(2_000));
            if tokens::count(tokenizer, &fill).tokens <= text {
                let with = RequestInputs {
                    catalog: &fill,
                    ..inputs(&row, "do a thing")
                };
                let part = assemble(&with).catalog_part().map(|p| p.tokens);
                assert!(part <= Some(a.tokens), "{tokenizer:?}");
            }
        }
    }

    #[test]
    fn parts_and_costs_add_up() {
        let mut row = BudgetRow::fallback();
        row.tokenizer = Tokenizer::O200k;
        row.prefix_cache = true;
        row.prompt_cache_min_tokens = Some(1);
        row.prices.input = 3.0;
        row.prices.cached_input = 0.3;
        row.prices.output = 15.0;
        let r = assemble(&inputs(&row, "plan my week"));
        assert!(r.parts.iter().all(|p| p.tokens > 0));
        // The request's parts by kind add up to its input, the catalog with its header.
        let attached = [AttachedText {
            name: "notes.md",
            text: "# Notes\nsome words",
        }];
        for tokenizer in [Tokenizer::Estimate, Tokenizer::O200k] {
            let mut row = row.clone();
            row.tokenizer = tokenizer;
            let with = RequestInputs {
                context: Some("a briefing"),
                attachments: &attached,
                ..inputs(&row, "plan my week")
            };
            let q = assemble(&with);
            let t = q.totals;
            assert_eq!(
                t.system + t.prompt + t.attachments + t.catalog + t.framing,
                q.input_tokens,
                "{tokenizer:?}: {t:?}"
            );
            assert_eq!(Some(t.catalog), q.catalog_part().map(|p| p.tokens));
            assert!(t.attachments > 0 && t.prompt > 0 && t.framing >= q.framing_tokens);
        }
        assert!(r.cost.input_cached < r.cost.input_uncached);
        let expect = r.input_tokens as f64 * 3.0 / 1e6;
        assert!((r.cost.input_uncached - expect).abs() < 1e-12);
        assert!(r.exact);
    }
}
