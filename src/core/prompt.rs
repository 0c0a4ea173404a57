//! The planner's system prompts and the catalog allowance: what is left of a model's input
//! ceiling once everything else that is sent has been counted (DESIGN §2.1, §2.9).

use serde::Serialize;

use crate::core::budget::{PromptVariant, Tokenizer};
use crate::core::compact::Allowance;
use crate::core::tokens;

/// For models that can follow a multi-step contract.
pub const SYSTEM_FULL_STEPS: &str = "You are a planner for a tool gateway. Given the user's request and the \
catalog of packs (single tools) and pipelines (multi-step recipes), return an ordered plan.

Rules:
1. Pipeline wins when one fits: if a pipeline's accepts and produces cover the request end to end, \
return ONE step that runs that pipeline by its id. Do not re-decompose what the pipeline already does.
2. Honour supersedes: a pipeline whose supersedes lists a pack the user named wins over that pack.
3. Decompose only when no pipeline fits: chain packs in the order the work needs them.
4. Use only names that appear in the catalog. If nothing fits a part of the request, use the tool \
\"unknown\" and say what is missing in the rationale.

Answer with JSON only, no prose, no code fences:
{\"steps\":[{\"order\":1,\"tool\":\"<pack name or pipeline id>\",\"args\":{},\"rationale\":\"<why>\"}]}";

/// For weak models: one decision, the smallest possible output.
pub const SYSTEM_SINGLE_PICK: &str = "Pick the tools for the user's request from the catalog below. \
Prefer one pipeline that does the whole job. Use only names from the catalog. \
Answer with JSON only: {\"steps\":[{\"order\":1,\"tool\":\"<name>\",\"args\":{},\"rationale\":\"<short>\"}]}";

/// Pass 1 of the two-pass filter: pick ids from one-line entries, nothing else.
pub const SYSTEM_FILTER: &str = "Below is a list of tools, one per line as `id — what it does`. \
Pick the ids the user's request needs (a pipeline that does the whole job is enough on its own). \
Answer with JSON only: {\"ids\":[\"<id>\"]}";

/// Most ids pass 1 may keep: the point is a small catalog for pass 2.
pub const FILTER_MAX_IDS: usize = 12;

/// Pass 1's output cap: an id list needs little.
pub const FILTER_MAX_TOKENS: usize = 256;

/// One `id — first sentence` line per entry.
pub fn filter_lines<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (id, description) in entries {
        out.push_str(id);
        let first = crate::core::catalog::first_sentence(description);
        if !first.is_empty() {
            out.push_str(" — ");
            out.push_str(first);
        }
        out.push('\n');
    }
    out
}

/// The label in front of the catalog in whichever message carries it.
pub const CATALOG_LABEL: &str = "CATALOG (routing guide):\n";

/// Tokens the chat format adds per message and to prime the reply (OpenAI's published
/// accounting: 3 per message plus 3 for the reply).
pub const TOKENS_PER_MESSAGE: usize = 3;
pub const TOKENS_REPLY_PRIMING: usize = 3;

/// The chat format's own tokens in a request of a system and a user message.
pub const CHAT_FRAMING_TOKENS: usize = 2 * TOKENS_PER_MESSAGE + TOKENS_REPLY_PRIMING;

/// The system prompt's tokens under `tokenizer`, counted once per process: it is a
/// constant, and every plan counted it four or five times (the gate, the request beside the
/// stand-in catalog, the request sent: its part and its message).
pub fn system_prompt_tokens(tokenizer: Tokenizer, variant: PromptVariant) -> usize {
    use std::sync::OnceLock;
    static COUNTS: [[OnceLock<usize>; 2]; 3] = [
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
    ];
    let t = match tokenizer {
        Tokenizer::O200k => 0,
        Tokenizer::Cl100k => 1,
        Tokenizer::Estimate => 2,
    };
    let v = match variant {
        PromptVariant::FullSteps => 0,
        PromptVariant::SinglePick => 1,
    };
    *COUNTS[t][v].get_or_init(|| tokens::count(tokenizer, system_prompt(variant)).tokens)
}

pub fn system_prompt(variant: PromptVariant) -> &'static str {
    match variant {
        PromptVariant::FullSteps => SYSTEM_FULL_STEPS,
        PromptVariant::SinglePick => SYSTEM_SINGLE_PICK,
    }
}

/// Headroom kept free of the catalog: 4 % of the input ceiling, at least 128 tokens.
pub fn safety_margin(input_tokens: usize) -> usize {
    (input_tokens / 25).max(128)
}

/// Where the input ceiling goes, and what is left for the catalog — in the request's own
/// parts (`PartTotals`, counted where the request is assembled), as the request line shows
/// them: the request assembled with no catalog text is what the catalog must fit beside, so
/// the allowance line and the request line name the same figures for system, prompt,
/// attachments and framing (tester 34 F2: the allowance had charged a formula's 733 tokens
/// for what the request counted as 731). The catalog part's header line
/// (`CATALOG (routing guide):`) is in `tokens`. Every surface (`preview`, `compact`, their
/// `--json`, the Catalog pane, the MCP tools) shows these figures as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AllowanceBreakdown {
    pub input_tokens: usize,
    pub system_prompt_tokens: usize,
    /// The caller's defaults block, as sent: part of `prompt_tokens`.
    pub defaults_tokens: usize,
    /// The prompt parts as sent: defaults, hint, past-plans prior and instruction (or a
    /// briefed instruction's placeholder), each with its header line.
    pub prompt_tokens: usize,
    /// The attachments and a pasted instruction's briefing, as sent.
    pub attachments_tokens: usize,
    /// What the parts leave of the request's count: the chat format's own tokens (per
    /// message, reply priming) and the blank lines between parts.
    pub framing_tokens: usize,
    pub margin_tokens: usize,
    /// The catalog part's header line, counted in `tokens`.
    pub catalog_header_tokens: usize,
    /// What is left for the catalog part as sent, its header line included.
    pub tokens: usize,
    /// The row's byte cap, if any.
    pub bytes: Option<usize>,
    pub exact: bool,
}

impl AllowanceBreakdown {
    /// What the catalog text itself may take (the part's allowance less its header line):
    /// what compaction fits the catalog into.
    pub fn allowance(&self) -> Allowance {
        Allowance {
            tokens: self.tokens.saturating_sub(self.catalog_header_tokens),
            bytes: self.bytes,
        }
    }

    /// The line every surface prints after the allowance's figure: `1,200 input − 64
    /// system − 27 prompt − 691 attachments − 13 framing − 128 margin` (attachments only
    /// when there are some).
    pub fn terms(&self) -> String {
        use crate::core::text::thousands;
        let attachments = if self.attachments_tokens > 0 {
            format!(" − {} attachments", thousands(self.attachments_tokens))
        } else {
            String::new()
        };
        // When the other parts alone pass the ceiling the allowance is 0, not the negative
        // the terms make: said, so the line is no false sum (tester 35 F2).
        let reserved = self.system_prompt_tokens
            + self.prompt_tokens
            + self.attachments_tokens
            + self.framing_tokens
            + self.margin_tokens;
        let over = match reserved.saturating_sub(self.input_tokens) {
            0 => String::new(),
            n => format!(": the other parts are {} over", thousands(n)),
        };
        format!(
            "{} input − {} system − {} prompt{attachments} − {} framing − {} margin{over}",
            thousands(self.input_tokens),
            thousands(self.system_prompt_tokens),
            thousands(self.prompt_tokens),
            thousands(self.framing_tokens),
            thousands(self.margin_tokens)
        )
    }
}
