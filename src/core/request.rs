//! The request that will be sent (issue 17): one pure function builds it whole from its
//! inputs — the planner's verdict and allowlist, the ranking with its explanations, the
//! gate's decision for the instruction and for each attachment, the catalog allowance,
//! compaction with every entry's fate, the assembled messages with tokens per part, and the
//! cost. `preview`, `compact --prompt` and the console's panes all read this one value, so
//! no view computes its own slice of the request.

use serde::Serialize;
use std::collections::HashSet;

use crate::core::assemble::{
    AssembledRequest, AttachedText, RequestInputs, STAND_IN_CATALOG, allowance_beside, assemble,
    wrapping_of,
};
use crate::core::budget::{EffectiveRow, MatchedBy, Tier, Tokenizer};
use crate::core::catalog::{EntryKind, TrimStep};
use crate::core::compact::{Allowance, CutOrder, PreparedCatalog, Relevance, TrimRecord};
use crate::core::compare::Arm;
use crate::core::gate::{
    Admission, Briefing, ContentKind, ContextBudget, EXACT_COUNT_MAX_BYTES, admit, briefing,
    content_ref, detect_kind,
};
use crate::core::past_steps::{PastSteps, PriorPart, prior_part};
use crate::core::planner::{ContextPlan, Planner, RANKED_KEPT_SHARE};
use crate::core::prompt::{
    AllowanceBreakdown, CATALOG_LABEL, CHAT_FRAMING_TOKENS, system_prompt_tokens,
};
use crate::core::rank::{
    Confidence, Explanation, HistoryPrior, Placement, RankIndex, Ranking, SEMANTIC_WEIGHT, Scored,
    should_escalate,
};
use crate::core::text::opening;
use crate::core::tokens;

/// Most of a huge paste the planner and ranker read: a classifier needs the opening, not
/// 50 MB of it.
pub const CLASSIFY_MAX_BYTES: usize = 16 * 1024;
/// How many ranked entries a request explains.
pub const TOP_EXPLAINED: usize = 10;
/// Most of an attachment read to decide its kind.
const KIND_SNIFF_BYTES: usize = 4 * 1024 * 1024;

/// What an attachment's outline is worth to the ranking: its best-matching entry gains this
/// share of the instruction's best lexical score (of 1 point when the instruction matches
/// nothing), every other entry in proportion. Measured on the cases in this module's tests
/// over w ∈ {0, 0.1, 0.25, 0.5, 1, 2} (`attachment_weight_grid`): 0.25 is the largest
/// weight at which every entry the instruction asks for keeps the place it has without the
/// attachment (`research.summarize` 2nd for "summarise this file" beside a file of
/// browser/memory definitions; 3rd at 0.5, 6th at 1), while the outline still lifts what it
/// is about (`browser.screenshot` from unranked to 13th there, 3rd for "review this", 1st
/// when the instruction names nothing).
pub const ATTACHMENT_WEIGHT: f64 = 0.25;

/// A file or paste sent beside the instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file name, or `stdin`.
    pub name: String,
    pub text: String,
}

impl Attachment {
    /// An attachment of `text` as every front end takes it: a leading byte-order mark is
    /// not text (a file read from disk drops it as it is decoded; MCP `preview` and a
    /// paste had kept it, tester 10 T10-23).
    pub fn new(name: String, text: String) -> Attachment {
        let text = match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        };
        Attachment { name, text }
    }
}

/// Which briefed parts' full text the output cache holds: what a briefing may say
/// ([`briefing`]'s `kept`), and [`GateView::cached`]. The request service decides it from
/// what was really stored.
#[derive(Debug, Clone, Copy)]
pub enum Kept<'a> {
    /// Every briefed part (the service stores each before the request goes anywhere, and
    /// plans again with [`Kept::Only`] when one could not be stored).
    All,
    /// Only the parts whose content has one of these refs.
    Only(&'a HashSet<String>),
    /// None: no cache, or one the request may not write.
    Nothing,
}

impl Kept<'_> {
    pub fn holds(&self, cache_ref: &str) -> bool {
        match self {
            Kept::All => true,
            Kept::Only(refs) => refs.contains(cache_ref),
            Kept::Nothing => false,
        }
    }
}

/// The names the attachments are sent under, in order: each as given, but a name an
/// earlier attachment already has gets the first free ` (2)`, ` (3)`, … (tester 19 F12: two
/// `notes.txt` went out under one name). The one naming every view of the request, its
/// text and what is stored use.
pub fn sent_names(attachments: &[Attachment]) -> Vec<String> {
    let given: HashSet<&str> = attachments.iter().map(|a| a.name.as_str()).collect();
    let mut taken: HashSet<String> = HashSet::new();
    attachments
        .iter()
        .map(|a| {
            let mut name = a.name.clone();
            let mut k = 2;
            while taken.contains(&name) || (k > 2 && given.contains(name.as_str())) {
                name = format!("{} ({k})", a.name);
                k += 1;
            }
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// One warning per attachment renamed by [`sent_names`].
fn renamed_warnings(attachments: &[Attachment], names: &[String]) -> Vec<String> {
    attachments
        .iter()
        .zip(names)
        .filter(|(a, n)| a.name != **n)
        .map(|(a, n)| {
            format!(
                "two attachments are named {}: the later one is sent as {}",
                crate::core::terminal_text::quoted(&a.name),
                crate::core::terminal_text::quoted(n)
            )
        })
        .collect()
}

/// Everything a request is built from.
pub struct PlanInputs<'a> {
    pub effective: &'a EffectiveRow,
    /// What the operator asks; the planner and the ranker read it.
    pub instruction: &'a str,
    /// Sent beside the instruction, each through the gate; the ranker reads only their
    /// outlines, the planner not at all.
    pub attachments: &'a [Attachment],
    /// The caller's defaults block (may be empty).
    pub defaults: &'a str,
    pub catalog: &'a PreparedCatalog,
    pub index: &'a RankIndex,
    pub planner: &'a Planner,
    /// Past plans for similar intents, as the ranking's prior (tools lifted by past
    /// intents).
    pub prior: Option<&'a HistoryPrior>,
    /// The steps followed plans of this intent's shape produced: sent as the `prior` part
    /// (bounded, tools checked against the catalog) unless the arm leaves it out.
    pub past_steps: Option<&'a PastSteps>,
    /// Which request to build: the one `preview` shows, or an A/B variant of it.
    pub arm: Arm,
    /// The two-pass filter's pick: only these entries may be sent.
    pub only: Option<&'a HashSet<String>>,
    /// [`ATTACHMENT_WEIGHT`] unless measuring.
    pub attachment_weight: f64,
    /// The semantic layer's input when it is on: per request of the instruction, every
    /// entry's similarity to it (see `RankIndex::rank_semantic`), computed by the `embed`
    /// service.
    pub semantic: Option<&'a [Vec<f64>]>,
    /// Which briefed parts the output cache holds.
    pub kept: Kept<'a>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptSize {
    pub bytes: usize,
    pub lines: usize,
    pub tokens: usize,
    pub exact: bool,
}

/// Count a text: exactly when it is small enough to matter, estimated (and labelled so)
/// beyond [`EXACT_COUNT_MAX_BYTES`].
pub fn prompt_size(tokenizer: Tokenizer, text: &str) -> PromptSize {
    let lines = text.lines().count();
    if text.len() > EXACT_COUNT_MAX_BYTES {
        return PromptSize {
            bytes: text.len(),
            lines,
            tokens: tokens::estimate(text),
            exact: false,
        };
    }
    let c = tokens::count(tokenizer, text);
    PromptSize {
        bytes: text.len(),
        lines,
        tokens: c.tokens,
        exact: c.exact,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingView {
    pub terms: Vec<String>,
    /// The requests the instruction was read as, when more than one: an explanation's
    /// `coverage_request` and `best_for_request` index them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
    pub confidence: Confidence,
    /// Would the two-pass filter escalate for this row?
    pub escalate: bool,
    pub top: Vec<Explanation>,
}

/// The gate's decision for one part (the instruction, or one attachment).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateView {
    pub admission: Admission,
    /// The window as this part found it (earlier parts already counted).
    pub budget: ContextBudget,
    /// Tokens the part takes once admitted (the briefing's, for a briefing).
    pub admitted_tokens: usize,
    pub briefing: Option<Briefing>,
    /// Whether the full content is in the output cache ([`PlanInputs::kept`]): the
    /// briefing sent names its ref only then.
    pub cached: bool,
    /// Tokens the part takes beyond what the window had left for it (0 when it fits): a
    /// briefing is smaller than its text, yet may still not fit (tester 34 F12: `briefing`
    /// for 487 tokens against 115 left, beside a request OVER its ceiling).
    #[serde(default, skip_serializing_if = "crate::core::compact::is_zero")]
    pub over_by: usize,
}

impl GateView {
    /// The gate's verdict as every screen words it: its label, and for a briefing that
    /// still does not fit, by how much (`briefing, over by 372`).
    pub fn verdict(&self) -> String {
        match self.admission {
            Admission::Briefing if self.over_by > 0 => format!(
                "briefing, over by {}",
                crate::core::text::thousands(self.over_by)
            ),
            other => other.label().to_string(),
        }
    }

    /// Whether what is sent of the part is over the room it had.
    pub fn is_over(&self) -> bool {
        self.admission == Admission::Over || self.over_by > 0
    }
}

/// One attachment as it goes out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttachmentView {
    pub name: String,
    pub kind: ContentKind,
    #[serde(flatten)]
    pub size: PromptSize,
    #[serde(flatten)]
    pub gate: GateView,
    /// The outline lines the ranker read (definitions, headings, key paths); never the body.
    pub outline: Vec<String>,
    /// Tokens the attachment takes in the request as sent: its text (or briefing) with the
    /// header line and fence around it — the request table's `attachment` part. Every
    /// "tokens sent" a front end shows is this (tester 19 F3: the briefing's count, without
    /// its framing, was shown as sent).
    pub sent_tokens: usize,
}

/// What became of one catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
pub enum Fate {
    /// Sent, with these trim steps changing its text (none: as written).
    Kept { trimmed_by: Vec<TrimStep> },
    /// Not in the planner's allowlist.
    RemovedByPlanner,
    /// Left out by the two-pass filter's pick.
    RemovedByFilter,
    /// Allowed, but cut (lowest ranked first) to fit the allowance.
    CutByBudget,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryFate {
    pub name: String,
    pub kind: EntryKind,
    /// 1-based place in the ranking when the entry scored at all.
    pub rank: Option<usize>,
    #[serde(flatten)]
    pub fate: Fate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionSummary {
    pub allowance: AllowanceBreakdown,
    pub trim: TrimRecord,
    /// Entries kept, in catalog order.
    pub kept: Vec<String>,
    /// Every entry of the catalog, in catalog order, with its fate.
    pub entries: Vec<EntryFate>,
    /// The catalog text as sent.
    #[serde(skip)]
    pub text: String,
    /// Indices of the kept entries, in catalog order.
    #[serde(skip)]
    pub kept_indices: Vec<usize>,
    /// How lists show the entries' names: the catalog's, worked out once when it was read.
    #[serde(skip)]
    pub names: crate::core::terminal_text::NamesShown,
}

impl CompactionSummary {
    /// The catalog's names as every list of them shows them: names that print alike spelled
    /// apart (tester 35 F5/F10).
    pub fn names_shown(&self) -> &crate::core::terminal_text::NamesShown {
        &self.names
    }

    /// Entries with `fate`'s variant.
    pub fn count(&self, matches: impl Fn(&Fate) -> bool) -> usize {
        self.entries.iter().filter(|e| matches(&e.fate)).count()
    }
}

/// The whole request that will be sent for one model, instruction and set of attachments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedRequest {
    pub model: String,
    pub row_id: String,
    pub matched_by: MatchedBy,
    pub tier: Tier,
    pub tier_overridden: bool,
    pub tokenizer: &'static str,
    /// Which A/B arm this request is (`compacted`: the request as built).
    pub arm: Arm,
    /// False when nothing was asked (no instruction, no attachment): the catalog as the
    /// model receives it before any prompt, nothing removed by the planner, no hint.
    pub asked: bool,
    /// The instruction's size.
    pub prompt: PromptSize,
    pub planner: ContextPlan,
    pub ranking: RankingView,
    /// The instruction's gate decision.
    pub gate: GateView,
    pub attachments: Vec<AttachmentView>,
    pub compaction: CompactionSummary,
    /// Steps past plans produced for similar intents, sent as their own part (`None`: no
    /// evidence, `--no-prior`, or the `no-prior` arm).
    pub past_steps: Option<PriorPart>,
    pub request: AssembledRequest,
    /// What the model's lookup noted (its own registry entry left out:
    /// [`EffectiveRow::notes`]), then what reading the catalog noted without refusing it (a
    /// name given twice), carried by the catalog: `preview`, `compact` and the MCP tools say
    /// the same.
    pub warnings: Vec<String>,
    /// Where `send` would send it now (`None`: planned without the providers, as `eval`
    /// and the benches plan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    /// The row it was computed for.
    #[serde(skip)]
    pub effective: EffectiveRow,
}

/// Where a request goes, as `send` resolves it when it is sent: the provider whose prefix
/// takes the model, its URL, the model id the body names, the key's variable. `preview`,
/// `compact`, the console and MCP show it, so a request cannot be refused or routed at
/// `send` in a way its preview did not say (tester 19 F2, F10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// `None` when no provider takes the model.
    pub provider: Option<String>,
    pub url: Option<String>,
    /// The `model` the body names (the provider's prefix taken off).
    pub model_sent: Option<String>,
    /// The variable the key is read from (`None`: the provider takes no key).
    pub key_env: Option<String>,
    /// Whether that variable holds a key now.
    pub key_set: bool,
    /// Why `send` would not send this request now (no provider, no key, another
    /// provider's key in it); `None`: it would be sent.
    pub not_sent: Option<String>,
    /// Whether the body asks for a stream (`"stream": true`, with `stream_options.
    /// include_usage`), as the provider's `stream` setting says (tester 33 F11: the preview
    /// did not say what `send` adds to the body).
    #[serde(default)]
    pub stream: bool,
}

impl Route {
    /// The route as `preview` and the console say it: `route: provider 'p' → URL, model
    /// 'm', key $VAR (set)`, then `not sent as it stands: WHY` when `send` would refuse.
    pub fn lines(&self) -> Vec<String> {
        use crate::core::terminal_text::{for_terminal_line, key_segment, quoted};
        let mut out = Vec::new();
        if let (Some(provider), Some(url), Some(model)) =
            (&self.provider, &self.url, &self.model_sent)
        {
            let key = match &self.key_env {
                Some(var) => format!(
                    "key ${} ({})",
                    key_segment(var),
                    if self.key_set { "set" } else { "not set" }
                ),
                None => "no key".to_string(),
            };
            out.push(format!(
                "route: provider {} → {}, model {}, {key}, {}",
                quoted(provider),
                for_terminal_line(url),
                quoted(model),
                if self.stream {
                    "streamed (\"stream\": true, usage asked in the last event)"
                } else {
                    "not streamed (\"stream\": false)"
                }
            ));
        }
        if let Some(why) = &self.not_sent {
            out.push(format!("not sent as it stands: {}", for_terminal_line(why)));
        }
        out
    }
}

/// The catalog's token figures as the model receives it, its header line included: the
/// request's catalog part, and the whole catalog in the same terms. `preview`, `compact` (and
/// its `--json`) and the Catalog pane show these; the trim record's `before_tokens` and
/// `after_tokens` count the catalog text alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CatalogTokens {
    /// The catalog part as sent ([`AssembledRequest::catalog_part`]).
    pub sent: usize,
    /// The whole catalog, untrimmed and uncut, with the same header line.
    pub full: usize,
}

impl PlannedRequest {
    /// The warnings (also in [`PlannedRequest::warnings`]) for the briefed parts whose full
    /// text is not kept: `send` and the console say them beside the request.
    pub fn not_kept(&self) -> Vec<String> {
        not_kept_warnings(&self.prompt, &self.gate, &self.attachments)
    }

    /// Whether a briefing sent names a part the output cache holds, and so tells the model
    /// to call `read_cached`.
    pub fn offers_read_cached(&self) -> bool {
        self.gates().any(|g| g.briefing.is_some() && g.cached)
    }

    /// The gate decision of every part the gate admits: the instruction's, then each
    /// attachment's.
    pub fn gates(&self) -> impl Iterator<Item = &GateView> {
        std::iter::once(&self.gate).chain(self.attachments.iter().map(|a| &a.gate))
    }

    /// The catalog's names as every list of them shows them ([`CompactionSummary::names_shown`]).
    pub fn names_shown(&self) -> &crate::core::terminal_text::NamesShown {
        self.compaction.names_shown()
    }

    /// The catalog's figures as sent and in full, header line included, from the one catalog
    /// part of the assembled request.
    pub fn catalog_tokens(&self) -> CatalogTokens {
        let t = &self.compaction.trim;
        let sent = self.request.catalog_part().map_or(0, |p| p.tokens);
        let header = sent.saturating_sub(t.after_tokens);
        CatalogTokens {
            sent,
            full: t.before_tokens + header,
        }
    }
}

/// Rank the catalog for an intent and turn it into a cut order (lowest first).
pub fn cut_order_for(catalog: &PreparedCatalog, ranking: Option<&Ranking>) -> CutOrder {
    match ranking {
        Some(r) if r.order.first().is_some_and(|s| s.score > 0.0) => {
            let mut relevance = vec![Relevance::default(); catalog.len()];
            for s in &r.order {
                if let Some(slot) = relevance.get_mut(s.index) {
                    *slot = Relevance {
                        score: s.score.max(0.0),
                        first: s.best_for_request.is_some(),
                        request: s.best_for_request,
                    };
                }
            }
            CutOrder::from_ranking(
                &r.indices(),
                catalog.len(),
                "ranked for the prompt: lowest relevance cut first",
            )
            .with_relevance(relevance)
        }
        // A prompt whose words matched no entry is not a missing prompt (tester 30 F5: both
        // read "no intent").
        Some(r) if !r.terms.is_empty() => {
            let mut order = CutOrder::from_end(catalog.guide());
            order.policy =
                "no entry matched the prompt: cut from the end, superseding pipelines last".into();
            order
        }
        _ => CutOrder::from_end(catalog.guide()),
    }
}

/// One part through the gate against what is left of `budget`, which then counts it.
fn admit_part(
    budget: &mut ContextBudget,
    tokenizer: Tokenizer,
    text: &str,
    name: Option<&str>,
    size: &PromptSize,
    kept: Kept,
) -> GateView {
    let seen = *budget;
    let admission = admit(&seen, size.tokens);
    let brief = (admission == Admission::Briefing).then(|| {
        let kind = detect_kind(name, opening(text, KIND_SNIFF_BYTES));
        let cache_ref = content_ref(text.as_bytes());
        let held = kept.holds(&cache_ref);
        briefing(text, kind, &cache_ref, held, name)
    });
    let brief_tokens = brief
        .as_ref()
        .map(|b| tokens::count(tokenizer, &b.text).tokens);
    // A briefing no smaller than the text helps nothing: the text goes as it is.
    let (admission, brief) = match brief_tokens {
        Some(t) if t >= size.tokens => (Admission::Over, None),
        _ => (admission, brief),
    };
    let cached = brief.as_ref().is_some_and(|b| kept.holds(&b.cache_ref));
    let admitted_tokens = match (&brief, brief_tokens) {
        (Some(_), Some(t)) => t,
        _ => size.tokens,
    };
    budget.consume(admitted_tokens);
    GateView {
        admission,
        budget: seen,
        admitted_tokens,
        briefing: brief,
        cached,
        over_by: admitted_tokens.saturating_sub(seen.available()),
    }
}

/// The lines of an attachment's structural outline the ranker may read: definitions,
/// headings, JSON key paths (without their types). A log or plain text has no structure
/// apart from its body, so it offers nothing.
fn outline(kind: ContentKind, text: &str, name: &str, brief: Option<&Briefing>) -> Vec<String> {
    if kind == ContentKind::Text {
        return Vec::new();
    }
    let owned;
    let b = match brief {
        Some(b) => b,
        None => {
            owned = briefing(text, kind, "", false, Some(name));
            &owned
        }
    };
    b.entries
        .iter()
        .filter_map(|e| match kind {
            // A key path, `$.users[0].email`; not the note that the text is not JSON.
            ContentKind::Json => e
                .text
                .split(": ")
                .next()
                .filter(|path| path.starts_with('$'))
                .map(str::to_string),
            _ => Some(e.text.clone()),
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// The instruction's ranking with the attachments' outline ranking added at `weight`
/// (see [`ATTACHMENT_WEIGHT`]). The instruction's terms and confidence stand: an outline
/// may reorder, never make the ranker surer. Nor does it undo the instruction's request
/// winners: they stay first, round by round (within a round by the blended score), and the
/// rest follow by the blended score.
fn blend(mut ranking: Ranking, outline: &Ranking, weight: f64) -> Ranking {
    let best_outline = outline.order.iter().map(|s| s.lexical).fold(0.0, f64::max);
    if best_outline <= 0.0 || weight <= 0.0 {
        return ranking;
    }
    let best_instruction = ranking.order.iter().map(|s| s.lexical).fold(0.0, f64::max);
    let scale = weight * best_instruction.max(1.0) / best_outline;
    let mut points = vec![0.0; ranking.order.len()];
    for s in &outline.order {
        if let Some(p) = points.get_mut(s.index) {
            *p = s.lexical * scale;
        }
    }
    for s in &mut ranking.order {
        s.attachment = points.get(s.index).copied().unwrap_or(0.0);
        s.score += s.attachment;
    }
    let by_score = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index));
    let h = ranking.head.len().min(ranking.order.len());
    let mut head: Vec<(Scored, Placement)> = ranking.order[..h]
        .iter()
        .copied()
        .zip(ranking.head.iter().copied())
        .collect();
    head.sort_by(|a, b| a.1.round.cmp(&b.1.round).then(by_score(&a.0, &b.0)));
    ranking.order[h..].sort_by(by_score);
    // A winner is marked only where it stands ahead of a higher score.
    let top_rest = ranking.order.get(h).map_or(f64::NEG_INFINITY, |s| s.score);
    let scores: Vec<f64> = head.iter().map(|(s, _)| s.score).collect();
    let ahead = crate::core::rank::placed_ahead_of_higher(&scores, top_rest);
    for (k, ((mut s, place), ahead)) in head.into_iter().zip(ahead).enumerate() {
        s.best_for_request = ahead.then_some(place.request);
        ranking.order[k] = s;
        ranking.head[k] = place;
    }
    ranking
}

/// Which trim steps changed entry `i`'s text, up to `stage`.
fn trimmed_by(catalog: &PreparedCatalog, i: usize, stage: usize) -> Vec<TrimStep> {
    (1..=stage)
        .filter(|&s| catalog.entry_text(i, s) != catalog.entry_text(i, s - 1))
        .map(|s| TrimStep::ALL[s - 1])
        .collect()
}

/// One warning per briefed part whose full text is not kept: the model sees only its map,
/// and nothing can read the rest (tester 19 F14: only the JSON's `cached: false` hinted it).
fn not_kept_warnings(
    prompt: &PromptSize,
    gate: &GateView,
    attachments: &[AttachmentView],
) -> Vec<String> {
    // An attachment's figure is the tokens it takes as sent, framing included, as every
    // "tokens sent" is (tester 19 F3).
    std::iter::once(("the instruction".to_string(), prompt, gate, gate.admitted_tokens))
        .chain(attachments.iter().map(|a| {
            (
                format!("attachment {}", a.name),
                &a.size,
                &a.gate,
                a.sent_tokens,
            )
        }))
        .filter(|(_, _, g, _)| g.briefing.is_some() && !g.cached)
        .map(|(what, size, _, sent)| {
            format!(
                "{} was briefed and is not kept: the model sees only its map ({} tokens sent of {}), and the rest is not in the output cache",
                crate::core::terminal_text::for_terminal_line(&what),
                crate::core::text::thousands(sent),
                crate::core::text::thousands(size.tokens)
            )
        })
        .collect()
}

/// What the request says where the instruction was briefed (its briefing follows as context).
const BRIEFED_INSTRUCTION: &str = "(see the briefing of the pasted content below)";

/// How much of a briefed instruction's end is sent as written beside its briefing.
const BRIEFED_INSTRUCTION_END_BYTES: usize = 240;

/// The request's text where the instruction was briefed: the placeholder, then the
/// instruction's last non-empty line as written (its last [`BRIEFED_INSTRUCTION_END_BYTES`]
/// at most). A paste with the question at its end had the question in no part of what was
/// sent: the briefing's map shows a paste's head, tail lines and errors, not its words
/// (tester 19 F19).
fn briefed_instruction(instruction: &str) -> String {
    let last = instruction
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut from = last.len().saturating_sub(BRIEFED_INSTRUCTION_END_BYTES);
    while !last.is_char_boundary(from) {
        from += 1;
    }
    let (cut, end) = (from > 0, &last[from..]);
    format!(
        "{BRIEFED_INSTRUCTION}\nIt ends{}: {}{end}",
        if cut { " (its last line's end)" } else { "" },
        if cut { "…" } else { "" }
    )
}

/// Whether an entry of the ranker's top may pass the planner ([`Planner::keep_ranked`]):
/// placed first for one of the question's requests or as a lookup step; or scored at least
/// [`RANKED_KEPT_SHARE`] of the best score on two or more of the question's words. One word
/// is not enough: "compare these two" ranks a podcast tool #3 for "two", "fix src/main.rs" an
/// image tool for "fix" (tester 24 N4), and under a weak top score half of it is little.
fn strong_enough_to_pass(e: &crate::core::rank::Explanation, best: f64) -> bool {
    let words: HashSet<&str> = e
        .matches
        .iter()
        .map(|m| m.term.as_str())
        .chain(e.rare_words.iter().map(|r| r.term.as_str()))
        .collect();
    // Placed first for a request (a second pick is only another candidate).
    (e.best_for_request.is_some() && e.request_round == Some(1))
        || e.lookup_for.is_some()
        || (e.score >= RANKED_KEPT_SHARE * best && words.len() >= 2)
}

/// Build the request. Pure: the same inputs give the same request, byte for byte.
pub fn plan_request(inp: &PlanInputs) -> PlannedRequest {
    let effective = inp.effective;
    let row = &effective.row;
    let tok = row.tokenizer;
    let catalog = inp.catalog;
    let no_intent = inp.instruction.trim().is_empty() && inp.attachments.is_empty();

    // The gate: each part, instruction first, against what the fixed parts and the parts
    // before it leave of the window.
    let system_tokens = system_prompt_tokens(tok, row.prompt_variant);
    let defaults_tokens = tokens::count(tok, inp.defaults).tokens;
    let catalog_header_tokens = tokens::count(tok, CATALOG_LABEL).tokens;
    // What the request wraps the instruction and each attachment in (their header lines and
    // the blank lines between), sent whether a part is admitted whole or briefed.
    let attachment_names = sent_names(inp.attachments);
    let raw: Vec<AttachedText> = inp
        .attachments
        .iter()
        .zip(&attachment_names)
        .map(|(a, name)| AttachedText {
            name,
            text: &a.text,
        })
        .collect();
    let used = system_tokens
        + defaults_tokens
        + CHAT_FRAMING_TOKENS
        + catalog_header_tokens
        + wrapping_of(&RequestInputs {
            model: &effective.model,
            row,
            catalog: "",
            defaults: inp.defaults,
            hint: None,
            prior: None,
            intent: inp.instruction,
            context: None,
            attachments: &raw,
            catalog_whole: true,
        });
    let mut budget = ContextBudget::new(row.input_tokens, used);
    let size = prompt_size(tok, inp.instruction);
    let gate = admit_part(&mut budget, tok, inp.instruction, None, &size, inp.kept);
    let attachments: Vec<AttachmentView> = inp
        .attachments
        .iter()
        .zip(&attachment_names)
        .map(|(a, name)| {
            let size = prompt_size(tok, &a.text);
            let gate = admit_part(&mut budget, tok, &a.text, Some(name), &size, inp.kept);
            let kind = detect_kind(Some(&a.name), opening(&a.text, KIND_SNIFF_BYTES));
            let outline = outline(kind, &a.text, name, gate.briefing.as_ref());
            AttachmentView {
                name: name.clone(),
                kind,
                size,
                gate,
                outline,
                // Set from the assembled request below.
                sent_tokens: 0,
            }
        })
        .collect();

    // The planner reads the instruction's opening, never an attachment.
    let classify = opening(inp.instruction, CLASSIFY_MAX_BYTES);
    let names: Vec<&str> = (0..catalog.len()).map(|i| catalog.entry_name(i)).collect();
    let mut plan = inp.planner.plan(classify, &names);
    if no_intent {
        // Nothing asked yet: every entry may go, and there is no hint to send.
        plan.allowlist = names.iter().map(|n| n.to_string()).collect();
        plan.kept = plan.total;
        plan.full_set_reason = Some("no instruction yet".into());
        plan.hint = None;
    } else if !inp.arm.narrows() && plan.allowlist.len() < plan.total {
        // An A/B arm without the planner's narrowing: every entry may go, and the hint
        // counts what is offered.
        plan.allowlist = names.iter().map(|n| n.to_string()).collect();
        plan.kept = plan.total;
        plan.full_set_reason = Some(format!("A/B arm {}: no planner narrowing", inp.arm));
        plan.recount_hint(plan.kept);
    }
    if inp.arm == Arm::NoHint {
        plan.hint = None;
    }

    // The ranking: the instruction (with the semantic layer when it is on), then the
    // attachments' outlines at a low weight.
    let ranking = match inp.semantic {
        Some(similarity) => {
            inp.index
                .rank_semantic(classify, inp.prior, similarity, SEMANTIC_WEIGHT)
        }
        None => inp.index.rank(classify, inp.prior),
    };
    let outline_text: String = attachments
        .iter()
        .flat_map(|a| a.outline.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let ranking = if outline_text.trim().is_empty() {
        ranking
    } else {
        let by_outline = inp.index.rank(&outline_text, None);
        let mut blended = blend(ranking, &by_outline, inp.attachment_weight);
        // The blend sorts by score again: the lookup steps go back after their entries.
        inp.index.place_lookups(&mut blended);
        blended
    };
    let top: Vec<usize> = ranking
        .order
        .iter()
        .take(TOP_EXPLAINED)
        .filter(|s| s.score > 0.0)
        .map(|s| s.index)
        .collect();
    let ranking_view = RankingView {
        terms: ranking.terms.clone(),
        requests: ranking.requests.clone(),
        confidence: ranking.confidence,
        escalate: should_escalate(row, &ranking.confidence),
        top: inp.index.explain_top(&ranking, &top, inp.prior),
    };
    if !no_intent && inp.arm.narrows() {
        let best = ranking_view.top.iter().map(|e| e.score).fold(0.0, f64::max);
        let ranked = ranking_view
            .top
            .iter()
            .map(|e| (e.name.as_str(), strong_enough_to_pass(e, best)));
        inp.planner.keep_ranked(&mut plan, ranked, &names);
    }

    // Compaction: the planner's allowlist (and the filter's pick), cut by ranking, into
    // what the instruction, the attachments, the hint and the prior leave.
    let past_steps = inp
        .past_steps
        .filter(|_| !no_intent && inp.arm != Arm::NoPrior)
        .and_then(|past| {
            let known: HashSet<&str> = names.iter().copied().collect();
            prior_part(past, |t| known.contains(t), tok)
        });
    // A briefed instruction goes as a placeholder (its briefing is what the gate admitted).
    let briefed_intent = gate
        .briefing
        .as_ref()
        .map(|_| briefed_instruction(inp.instruction));
    let (intent, context) = match (&gate.briefing, &briefed_intent) {
        (Some(b), Some(said)) => (said.as_str(), Some(b.text.as_str())),
        _ => (inp.instruction, None),
    };
    let attached: Vec<AttachedText> = inp
        .attachments
        .iter()
        .zip(&attachments)
        .map(|(a, v)| AttachedText {
            name: &v.name,
            text: v.gate.briefing.as_ref().map_or(&a.text, |b| &b.text),
        })
        .collect();
    // The request's inputs with `catalog` as the catalog's text (`whole`: as written).
    let request_with = |catalog: &str, whole: bool, hint: Option<&str>| {
        assemble(&RequestInputs {
            model: &effective.model,
            row,
            catalog,
            defaults: inp.defaults,
            hint,
            prior: past_steps.as_ref().map(|p| p.text.as_str()),
            intent,
            context,
            attachments: &attached,
            catalog_whole: whole,
        })
    };
    // What the catalog must fit beside: the request as it will be sent, with the shortest
    // catalog text in place of the catalog's.
    let reserved = request_with(STAND_IN_CATALOG, true, plan.hint.as_deref());
    let allowance = allowance_beside(row, &reserved);
    let planner_allows: Vec<bool> = {
        let allowlist: HashSet<&str> = plan.allowlist.iter().map(String::as_str).collect();
        (0..catalog.len())
            .map(|i| allowlist.contains(catalog.entry_name(i)))
            .collect()
    };
    let by_planner = |i: usize| planner_allows[i];
    // The full arm sends the whole catalog: no filter pick either.
    let by_filter = |i: usize| {
        inp.arm == Arm::Full || inp.only.is_none_or(|o| o.contains(catalog.entry_name(i)))
    };
    let allowed: Vec<usize> = (0..catalog.len())
        .filter(|&i| by_planner(i) && by_filter(i))
        .collect();
    let order = cut_order_for(catalog, Some(&ranking));
    // Compaction into the allowance less `shave` tokens.
    let compact_to = |shave: usize| {
        if inp.arm == Arm::Full {
            // Nothing trimmed, nothing cut; whether it fits the allowance is still said.
            let unbounded = Allowance {
                tokens: usize::MAX,
                bytes: None,
            };
            let mut c = catalog.compact_among(unbounded, tok, &order, Some(&allowed));
            let fits = allowance.allowance();
            c.trim.fits = c.trim.after_tokens <= fits.tokens
                && fits.bytes.is_none_or(|b| c.trim.after_bytes <= b);
            c.trim.cut_policy =
                "A/B arm full: the whole catalog as written (no planner narrowing, no compaction)"
                    .into();
            c
        } else {
            let mut fits = allowance.allowance();
            fits.tokens = fits.tokens.saturating_sub(shave);
            catalog.compact_among(fits, tok, &order, Some(&allowed))
        }
    };
    // A text counted whole can take a token or two more than its parts counted apart (the
    // blank lines around the catalog read as one piece with its last line): when the
    // request is over the ceiling less the margin by that much, the catalog gives it back,
    // so the margin is never spent on the catalog (the allowance line stays the request's
    // own parts).
    let ceiling = row.input_tokens.saturating_sub(allowance.margin_tokens);
    let mut shave = 0;
    let mut rounds = 0;
    let (compacted, request) = loop {
        rounds += 1;
        let compacted = compact_to(shave);
        // The hint counts the entries the catalog sends, not the planner's allowlist (tester
        // 12 T12-2: "tools: 60/60" beside 55 entries). It was counted above with the
        // allowlist's count, which has at least as many digits: what is sent is never over
        // what was counted.
        plan.recount_hint(compacted.kept.len());
        let whole = compacted.kept.len() == catalog.len() && compacted.trim.trim_level == 0;
        let request = request_with(&compacted.text, whole, plan.hint.as_deref());
        let over = request.input_tokens.saturating_sub(ceiling);
        if over == 0 || inp.arm == Arm::Full || compacted.kept.is_empty() || rounds == 4 {
            break (compacted, request);
        }
        shave += over;
    };

    let stage = compacted.trim.trim_level as usize;
    let mut rank_of = vec![None; catalog.len()];
    for (place, s) in ranking.order.iter().enumerate() {
        if s.score > 0.0
            && let Some(r) = rank_of.get_mut(s.index)
        {
            *r = Some(place + 1);
        }
    }
    let mut is_kept = vec![false; catalog.len()];
    compacted.kept.iter().for_each(|&i| is_kept[i] = true);
    let entries: Vec<EntryFate> = (0..catalog.len())
        .map(|i| EntryFate {
            name: catalog.entry_name(i).to_string(),
            kind: catalog.entry_kind(i),
            rank: rank_of[i],
            fate: if is_kept[i] {
                Fate::Kept {
                    trimmed_by: trimmed_by(catalog, i, stage),
                }
            } else if !by_planner(i) {
                Fate::RemovedByPlanner
            } else if !by_filter(i) {
                Fate::RemovedByFilter
            } else {
                Fate::CutByBudget
            },
        })
        .collect();
    let kept = compacted
        .kept
        .iter()
        .map(|&i| catalog.entry_name(i).to_string())
        .collect();
    // Said of what is sent: one the budget cut is not "kept" (tester 24 N2).
    plan.ranked_in.retain(|name| {
        compacted
            .kept
            .iter()
            .any(|&i| catalog.entry_name(i) == name)
    });
    let mut attachments = attachments;
    let parts = request.parts.iter().filter(|p| p.part == "attachment");
    for (a, part) in attachments.iter_mut().zip(parts) {
        a.sent_tokens = part.tokens;
    }
    let not_kept = not_kept_warnings(&size, &gate, &attachments);
    PlannedRequest {
        model: effective.model.clone(),
        row_id: row.id.clone(),
        matched_by: effective.matched_by,
        tier: row.tier,
        tier_overridden: effective.tier_override.is_some(),
        tokenizer: tok.name(),
        arm: inp.arm,
        asked: !no_intent,
        prompt: size,
        planner: plan,
        ranking: ranking_view,
        gate,
        attachments,
        compaction: CompactionSummary {
            allowance,
            trim: compacted.trim,
            kept,
            entries,
            text: compacted.text,
            kept_indices: compacted.kept,
            names: catalog.names_shown().clone(),
        },
        past_steps,
        request,
        warnings: effective
            .notes
            .iter()
            .chain(catalog.warnings())
            .cloned()
            .chain(renamed_warnings(inp.attachments, &attachment_names))
            .chain(not_kept)
            .collect(),
        route: None,
        effective: effective.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::assemble::catalog_allowance;
    use crate::core::assemble::{UserPiece, wrapping_tokens};
    use crate::core::budget::{BudgetRow, Tokenizer};
    use crate::core::catalog::RoutingGuide;
    use crate::core::planner::RulesFile;

    const CATALOG: &str = include_str!("../../sample-data/catalog.json");
    const RULES: &str = include_str!("../../sample-data/planner.toml");
    const CAPTURE_LOG: &str = include_str!("../../tests/data/prompts/capture_log.rs");
    const LAUNCH_NOTE: &str = include_str!("../../tests/data/prompts/launch_note.md");
    const USERS: &str = include_str!("../../tests/data/prompts/users.json");
    const GATEWAY_LOG: &str = include_str!("../../tests/data/prompts/gateway.log");

    struct Parts {
        catalog: PreparedCatalog,
        index: RankIndex,
        planner: Planner,
    }

    fn parts() -> Parts {
        let guide: RoutingGuide = serde_json::from_str(CATALOG).unwrap();
        let rules = RulesFile::parse(RULES, "sample rules").unwrap();
        Parts {
            index: RankIndex::new(&guide),
            catalog: PreparedCatalog::new(guide),
            planner: Planner::new(&rules, "sample rules").unwrap(),
        }
    }

    /// The Tier C fallback row, or a roomy Tier A one.
    fn row(tier: Tier) -> EffectiveRow {
        let mut row = BudgetRow::fallback();
        if tier == Tier::A {
            row = row.with_tier(Tier::A);
            row.input_tokens = 180_000;
            row.tokenizer = Tokenizer::O200k;
        }
        EffectiveRow::of_row(&row, None)
    }

    fn attach(name: &str, text: &str) -> Attachment {
        Attachment {
            name: name.into(),
            text: text.into(),
        }
    }

    fn plan_with(
        p: &Parts,
        effective: &EffectiveRow,
        instruction: &str,
        attachments: &[Attachment],
        weight: f64,
    ) -> PlannedRequest {
        plan_request(&PlanInputs {
            effective,
            instruction,
            attachments,
            defaults: "",
            catalog: &p.catalog,
            index: &p.index,
            planner: &p.planner,
            prior: None,
            past_steps: None,
            arm: Arm::Compacted,
            only: None,
            attachment_weight: weight,
            semantic: None,
            kept: Kept::All,
        })
    }

    /// As [`plan_with`], for an arm and with past steps.
    fn plan_arm(
        p: &Parts,
        effective: &EffectiveRow,
        instruction: &str,
        past_steps: Option<&PastSteps>,
        arm: Arm,
    ) -> PlannedRequest {
        plan_request(&PlanInputs {
            effective,
            instruction,
            attachments: &[],
            defaults: "",
            catalog: &p.catalog,
            index: &p.index,
            planner: &p.planner,
            prior: None,
            past_steps,
            arm,
            only: None,
            attachment_weight: ATTACHMENT_WEIGHT,
            semantic: None,
            kept: Kept::All,
        })
    }

    /// Tester 26 N3: a first-round winner placed ahead of a higher-scoring second pick read
    /// unmarked (`podcast.script 15.01` above `builtin.health-report 17.19`), and a request's
    /// second pick was marked while its first was not. Every entry of the top standing ahead
    /// of a higher score says why: placed for a request, or as a lookup.
    #[test]
    fn every_entry_placed_above_a_higher_score_says_why() {
        let p = parts();
        for prompt in [
            "check the GPU health. Run the tests in the sandbox. Then write a podcast script about the results.",
            "take a screenshot of the status dashboard. Translate the launch post into German. Remember the decision in memory.",
            "what is the weather in Paris? Also find the retry policy in the repo, and ocr this scanned receipt",
            "search the web for lisbon weather and save it to a file",
            "summarise this launch note and draft a blog post from it",
        ] {
            let r = plan_with(&p, &row(Tier::C), prompt, &[], ATTACHMENT_WEIGHT);
            let top = &r.ranking.top;
            for (i, e) in top.iter().enumerate() {
                if top[i + 1..].iter().any(|later| later.score > e.score) {
                    assert!(
                        e.best_for_request.is_some() || e.lookup_for.is_some(),
                        "{prompt}: #{} {}",
                        i + 1,
                        e.one_line()
                    );
                }
            }
        }
    }

    /// Tester 19 F16: "search the web … and save it to a file" fired research alone, and the
    /// ranker's #2 `fs.write` was removed by the planner while the catalog used 8 % of its
    /// allowance: the request could not save anything. The ranker's best three pass now,
    /// are said as such, and counted by the hint; `keep_ranked_top = 0` keeps the old cut.
    #[test]
    fn the_rankers_best_pass_the_planner_whatever_their_category() {
        let prompt = "search the web for lisbon weather and save it to a file";
        let p = parts();
        let r = plan_with(&p, &row(Tier::C), prompt, &[], ATTACHMENT_WEIGHT);
        assert_eq!(r.planner.categories, ["research"]);
        let top3: Vec<&str> = r
            .ranking
            .top
            .iter()
            .take(3)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(top3[..2], ["web.search", "fs.write"]);
        assert!(r.compaction.kept.iter().any(|k| k == "fs.write"));
        assert!(r.planner.ranked_in.iter().any(|k| k == "fs.write"));
        for name in &r.planner.ranked_in {
            assert!(top3.contains(&name.as_str()), "{name} is not in the top 3");
        }
        assert_eq!(r.planner.kept, r.compaction.kept.len());
        let hint = r.planner.hint.as_deref().unwrap_or_default();
        assert!(
            hint.contains(&format!("tools: {}/", r.compaction.kept.len())),
            "{hint}"
        );
        let line = r.planner.ranked_in_line().unwrap_or_default();
        assert!(
            line.starts_with("kept as the ranker's best, outside research: ")
                && line.contains("fs.write"),
            "{line}"
        );
        let written = r.compaction.entries.iter().find(|e| e.name == "fs.write");
        assert!(matches!(written.map(|e| &e.fate), Some(Fate::Kept { .. })));
        // Only a strong one of the top three: "compare these two" ranks a podcast tool #3
        // for the word "two" alone, and it stays out.
        for prompt in [
            prompt,
            "compare these two",
            "summarise this launch note and draft a blog post from it",
        ] {
            let r = plan_with(&p, &row(Tier::C), prompt, &[], ATTACHMENT_WEIGHT);
            let top = r.ranking.top.iter().map(|e| e.score).fold(0.0, f64::max);
            for name in &r.planner.ranked_in {
                let place = r.ranking.top.iter().position(|e| &e.name == name);
                assert!(
                    place.is_some_and(|k| k < 3),
                    "{prompt}: {name} at {place:?}"
                );
                let e = &r.ranking.top[place.unwrap_or_default()];
                assert!(
                    e.best_for_request.is_some() || e.score >= RANKED_KEPT_SHARE * top,
                    "{prompt}: {name} {} of {top}",
                    e.score
                );
            }
        }
        // Tester 24 N4: one word is not enough, however weak the top: an image tool for
        // "fix", a screenshot tool for "log".
        for (prompt, stray) in [
            ("fix src/main.rs", "image.edit"),
            ("investigate this log", "browser.screenshot"),
        ] {
            let r = plan_with(&p, &row(Tier::C), prompt, &[], ATTACHMENT_WEIGHT);
            assert!(
                !r.planner.ranked_in.iter().any(|n| n == stray),
                "{prompt}: {:?}",
                r.planner.ranked_in
            );
        }
        // Tester 24 N2: under a 600-byte catalog the budget cut the #3 it had let in, and the
        // line still named it. What is named is what is sent.
        let mut tight = BudgetRow::fallback();
        tight.max_catalog_bytes = Some(600);
        let tight = EffectiveRow::of_row(&tight, None);
        let r = plan_with(&p, &tight, prompt, &[], ATTACHMENT_WEIGHT);
        assert!(
            r.compaction
                .entries
                .iter()
                .any(|e| e.fate == Fate::CutByBudget)
        );
        for name in &r.planner.ranked_in {
            assert!(
                r.compaction.kept.contains(name),
                "{name} named, not sent: {:?}",
                r.compaction.kept
            );
        }
        let r = plan_with(
            &p,
            &row(Tier::C),
            "compare these two",
            &[],
            ATTACHMENT_WEIGHT,
        );
        assert!(
            !r.compaction
                .kept
                .iter()
                .any(|k| k.starts_with("builtin.post-to-podcast")),
            "{:?}",
            r.compaction.kept
        );

        let rules = RulesFile::parse(RULES, "sample rules")
            .unwrap()
            .overlay(RulesFile::parse("keep_ranked_top = 0", "planner.toml").unwrap());
        let narrow = Parts {
            planner: Planner::new(&rules, "rules").unwrap(),
            ..parts()
        };
        let r = plan_with(&narrow, &row(Tier::C), prompt, &[], ATTACHMENT_WEIGHT);
        assert!(r.planner.ranked_in.is_empty());
        assert!(r.planner.ranked_in_line().is_none());
        let written = r.compaction.entries.iter().find(|e| e.name == "fs.write");
        assert_eq!(written.map(|e| &e.fate), Some(&Fate::RemovedByPlanner));
    }

    /// Tester 12 T12-1: the allowance counts the request as assembled: each attachment's
    /// header line (`ATTACHMENT name:`) and the blank lines between parts. With many small
    /// attachments under long names, a catalog that "fits" had made a request over the input
    /// ceiling (3,462 of 3,000 tokens with 30 of them).
    /// Tester 19 F19: a paste typed as the instruction, the question at its end, was
    /// briefed and the question went nowhere. Its last line (its end, when long) is sent.
    #[test]
    fn a_briefed_instruction_sends_its_last_line_beside_its_map() {
        let p = parts();
        let log = GATEWAY_LOG.repeat(400);
        let asked = format!("{log}\nwhich upstream failed first and why?\n\n");
        let planned = plan_with(&p, &row(Tier::C), &asked, &[], ATTACHMENT_WEIGHT);
        assert!(
            planned.gate.briefing.is_some(),
            "the instruction is briefed"
        );
        let user = &planned.request.messages[1].content;
        assert!(
            user.contains("It ends: which upstream failed first and why?"),
            "{user}"
        );
        // One long line: its end, marked as cut.
        let blob = format!(
            "{} -- QUESTION: which encoding is this?",
            "QUJD".repeat(20_000)
        );
        let planned = plan_with(&p, &row(Tier::C), &blob, &[], ATTACHMENT_WEIGHT);
        let user = &planned.request.messages[1].content;
        assert!(
            user.contains("It ends (its last line's end): …")
                && user.contains("-- QUESTION: which encoding is this?"),
            "{user}"
        );
        let fits: usize = planned.request.input_tokens;
        assert!(fits <= row(Tier::C).row.input_tokens, "{fits}");
    }

    /// Tester 30 F1: in a 100-token window a 13-token instruction was briefed into a
    /// 93-token map of itself, and the request grew from its 13 tokens to 152. A briefing
    /// no smaller than the text is not made: the text goes as it is, said `over`.
    #[test]
    fn a_briefing_no_smaller_than_its_text_is_not_made() {
        let p = parts();
        let mut tiny = BudgetRow::fallback();
        tiny.input_tokens = 100;
        tiny.output_tokens = 10;
        let e = EffectiveRow::of_row(&tiny, None);
        let asked = "find flights to Lisbon and book a hotel";
        let planned = plan_with(&p, &e, asked, &[], ATTACHMENT_WEIGHT);
        assert_eq!(planned.gate.admission, Admission::Over);
        assert!(planned.gate.briefing.is_none());
        assert_eq!(planned.gate.admitted_tokens, planned.prompt.tokens);
        let user = &planned.request.messages[1].content;
        assert!(user.contains(asked) && !user.contains("## Map"), "{user}");
        // A long paste in the same window is still briefed: its map is the smaller.
        let log = GATEWAY_LOG.repeat(400);
        let planned = plan_with(&p, &e, &log, &[], ATTACHMENT_WEIGHT);
        assert_eq!(planned.gate.admission, Admission::Briefing);
        // Tester 34 F12: the briefing is smaller than the log, yet over what the window had
        // left; every screen says so beside the verdict.
        let g = &planned.gate;
        assert!(g.admitted_tokens > g.budget.available(), "{g:?}");
        assert_eq!(g.over_by, g.admitted_tokens - g.budget.available());
        assert_eq!(
            g.verdict(),
            format!(
                "briefing, over by {}",
                crate::core::text::thousands(g.over_by)
            )
        );
        assert!(g.is_over());
        let fits = plan_with(&p, &row(Tier::C), asked, &[], ATTACHMENT_WEIGHT);
        assert_eq!((fits.gate.over_by, fits.gate.is_over()), (0, false));
        assert_eq!(fits.gate.verdict(), fits.gate.admission.label());
    }

    /// Tester 30 F5: a prompt whose words matched no entry was cut "no intent", as if no
    /// prompt had been given.
    #[test]
    fn a_prompt_that_matches_nothing_is_not_called_no_intent() {
        let p = parts();
        let r = p.index.rank("zzqx wobblefrob", None);
        assert!(!r.terms.is_empty());
        let order = cut_order_for(&p.catalog, Some(&r));
        assert!(
            order.policy.starts_with("no entry matched the prompt"),
            "{}",
            order.policy
        );
        let none = cut_order_for(&p.catalog, None);
        assert!(none.policy.starts_with("no intent"), "{}", none.policy);
    }

    /// The allowance is counted with a stand-in catalog text; the real one can make the
    /// framing a token more across its edges. Over windows of every size the catalog gives
    /// that token back, and the request never spends the margin.
    #[test]
    fn the_margin_is_never_spent_on_the_catalog_whatever_the_window() {
        let p = parts();
        let mut checked = 0;
        for tokenizer in [Tokenizer::O200k, Tokenizer::Estimate] {
            for input_tokens in (700..4_000).step_by(13) {
                let mut base = BudgetRow::fallback();
                base.tokenizer = tokenizer;
                base.input_tokens = input_tokens;
                base.max_catalog_bytes = None;
                let e = EffectiveRow::of_row(&base, None);
                let r = plan_with(&p, &e, BLOG, &[], ATTACHMENT_WEIGHT);
                if r.compaction.kept.is_empty() {
                    continue;
                }
                checked += 1;
                let a = &r.compaction.allowance;
                assert!(
                    r.request.input_tokens + a.margin_tokens <= input_tokens,
                    "{tokenizer:?} {input_tokens}: {} + margin {}",
                    r.request.input_tokens,
                    a.margin_tokens
                );
                allowance_is_the_requests_parts(&r);
            }
        }
        assert!(checked > 300, "{checked}");
    }

    #[test]
    fn a_catalog_that_fits_makes_a_request_that_fits_however_many_attachments() {
        let p = parts();
        for tokenizer in [Tokenizer::O200k, Tokenizer::Estimate] {
            let mut base = BudgetRow::fallback();
            base.tokenizer = tokenizer;
            base.input_tokens = 3_000;
            let e = EffectiveRow::of_row(&base, None);
            for n in [1, 10, 30] {
                let attachments: Vec<Attachment> = (0..n)
                    .map(|k| {
                        attach(
                            &format!(
                                "quarterly_financial_reconciliation_report_for_the_northern_region_department_part_{k:02}.txt"
                            ),
                            "abcd",
                        )
                    })
                    .collect();
                let r = plan_with(
                    &p,
                    &e,
                    "résumé these reports, then file them",
                    &attachments,
                    ATTACHMENT_WEIGHT,
                );
                let a = r.compaction.allowance;
                assert!(
                    r.compaction.trim.fits,
                    "{tokenizer:?} {n}: the catalog fits its allowance"
                );
                allowance_is_the_requests_parts(&r);
                assert!(
                    r.request.input_tokens + a.margin_tokens <= base.input_tokens,
                    "{tokenizer:?} {n} attachments: the request is {} tokens, over the ceiling {} less the margin {}",
                    r.request.input_tokens,
                    base.input_tokens,
                    a.margin_tokens
                );
            }
        }
    }

    /// Tester 12 T12-2: the hint tells the model how many entries the catalog it is sent
    /// holds. It had counted the planner's allowlist ("tools: 60/60" beside 55 entries).
    #[test]
    fn the_hint_counts_the_entries_sent() {
        let p = parts();
        let e = row(Tier::C);
        let r = plan_with(&p, &e, BLOG, &[], ATTACHMENT_WEIGHT);
        let kept = r.compaction.kept.len();
        assert!(
            r.compaction.count(|f| *f == Fate::CutByBudget) > 0,
            "the budget cuts something here"
        );
        let hint = r.planner.hint.as_deref().expect("an intent gets a hint");
        assert!(
            hint.contains(&format!("tools: {kept}/{}", p.catalog.len())),
            "{hint} (sent {kept})"
        );
        assert!(r.request.messages[1].content.contains(hint));
    }

    const BLOG: &str = "remember this launch note, draft a blog from it and make an illustration";

    fn past(decompositions: &[(&[&str], usize)]) -> PastSteps {
        PastSteps {
            shape: crate::core::history::shape(BLOG),
            followed: decompositions.iter().map(|d| d.1).sum(),
            decompositions: decompositions
                .iter()
                .map(|(tools, n)| crate::core::past_steps::Decomposition {
                    tools: tools.iter().map(|t| t.to_string()).collect(),
                    plans: *n,
                    plan_ids: (0..*n).map(|k| format!("pl-{k}")).collect(),
                })
                .collect(),
        }
    }

    fn part_names(r: &PlannedRequest) -> Vec<&str> {
        r.request.parts.iter().map(|p| p.part).collect()
    }

    /// The allowance line and the request line name the same parts with the same figures
    /// (tester 34 F2: the allowance charged 733 tokens for prompt and framing where the
    /// request counted 731), but for the framing, which the tokenizer can make a token or
    /// two apart across the catalog's edges; and the request keeps the margin.
    fn allowance_is_the_requests_parts(r: &PlannedRequest) {
        let (a, t) = (&r.compaction.allowance, &r.request.totals);
        assert_eq!(
            (
                a.system_prompt_tokens,
                a.prompt_tokens,
                a.attachments_tokens
            ),
            (t.system, t.prompt, t.attachments),
            "{}",
            a.terms()
        );
        assert!(a.framing_tokens.abs_diff(t.framing) <= 2, "{}", a.terms());
        let reserved = a.system_prompt_tokens
            + a.prompt_tokens
            + a.attachments_tokens
            + a.framing_tokens
            + a.margin_tokens;
        assert_eq!(a.tokens, a.input_tokens.saturating_sub(reserved));
        if !r.compaction.kept.is_empty() {
            assert!(r.request.input_tokens + a.margin_tokens <= a.input_tokens);
        }
    }

    #[test]
    fn past_steps_are_a_part_of_their_own_counted_before_the_allowance() {
        let p = parts();
        let steps = past(&[(&["memory.store", "blog.draft", "image.generate"], 3)]);
        for tier in [Tier::A, Tier::C] {
            let e = row(tier);
            let without = plan_arm(&p, &e, BLOG, None, Arm::Compacted);
            let with = plan_arm(&p, &e, BLOG, Some(&steps), Arm::Compacted);
            let prior = with.past_steps.as_ref().expect("evidence gives a prior");
            assert_eq!(prior.sent[0].plan_ids, vec!["pl-0", "pl-1", "pl-2"]);
            assert!(without.past_steps.is_none());
            assert_eq!(
                part_names(&with),
                ["system prompt", "catalog", "hint", "prior", "intent"]
            );
            assert!(!part_names(&without).contains(&"prior"));
            let part = &with.request.parts[3];
            assert_eq!(part.tokens, prior.tokens);
            assert!(with.request.messages[1].content.contains(&format!(
                "{}\n- memory.store → blog.draft → image.generate (followed in 3 past plans)\n\nREQUEST:",
                crate::core::past_steps::PRIOR_HEADING
            )));
            // Counted against the window like the hint: the catalog gets that much less.
            let (a, b) = (&with.compaction.allowance, &without.compaction.allowance);
            assert_eq!(a.prompt_tokens, b.prompt_tokens + prior.tokens);
            assert_eq!(
                a.tokens + prior.tokens + a.framing_tokens - b.framing_tokens,
                b.tokens
            );
            allowance_is_the_requests_parts(&with);
            allowance_is_the_requests_parts(&without);
            assert!(with.request.input_tokens > without.request.input_tokens);
        }
        let e = row(Tier::C);
        // Nothing asked: no prior.
        assert!(
            plan_arm(&p, &e, " ", Some(&steps), Arm::Compacted)
                .past_steps
                .is_none()
        );
        // A tool today's catalog lacks: that decomposition stays out, and with it the part.
        let gone = past(&[(&["memory.store", "blog.draft", "fax.send"], 4)]);
        let r = plan_arm(&p, &e, BLOG, Some(&gone), Arm::Compacted);
        assert!(r.past_steps.is_none());
        assert_eq!(r, plan_arm(&p, &e, BLOG, None, Arm::Compacted));
    }

    #[test]
    fn each_arm_takes_away_one_thing_and_says_which() {
        let p = parts();
        let e = row(Tier::C);
        let steps = past(&[(&["memory.store", "blog.draft", "image.generate"], 3)]);
        let arm = |a: Arm| plan_arm(&p, &e, BLOG, Some(&steps), a);
        let base = arm(Arm::Compacted);
        assert_eq!(base.arm, Arm::Compacted);
        let removed = base.compaction.count(|f| *f == Fate::RemovedByPlanner);
        assert!(removed > 0 && !base.compaction.trim.cut.is_empty());

        // full: every entry as written, nothing removed or cut, said not to fit Tier C.
        let full = arm(Arm::Full);
        assert_eq!(full.arm, Arm::Full);
        assert_eq!(full.compaction.text, p.catalog.render_full());
        assert!(
            full.compaction
                .entries
                .iter()
                .all(|x| matches!(&x.fate, Fate::Kept { trimmed_by } if trimmed_by.is_empty()))
        );
        assert!(!full.compaction.trim.fits);
        assert_eq!(full.planner.kept, full.planner.total);
        let hint = full.planner.hint.as_deref().unwrap();
        assert!(
            hint.contains(&format!("tools: {0}/{0}", p.catalog.len())),
            "{hint}"
        );
        assert!(full.past_steps.is_some(), "only the catalog differs");

        // no-planner: every entry allowed, then compacted to fit.
        let open = arm(Arm::NoPlanner);
        assert_eq!(open.compaction.count(|f| *f == Fate::RemovedByPlanner), 0);
        assert!(open.compaction.trim.fits && !open.compaction.trim.cut.is_empty());
        assert!(
            open.planner
                .full_set_reason
                .as_deref()
                .unwrap()
                .contains("no-planner")
        );

        // no-prior: the request without the part, and that much more room for the catalog.
        let bare = arm(Arm::NoPrior);
        assert!(bare.past_steps.is_none());
        assert!(!part_names(&bare).contains(&"prior"));
        assert_eq!(
            bare.compaction.allowance.tokens,
            base.compaction.allowance.tokens
                + base.past_steps.as_ref().unwrap().tokens
                + wrapping_tokens(e.row.tokenizer, &[(UserPiece::Prior, "")])
        );
        assert_eq!(bare.planner, base.planner);

        // no-hint: the request without the hint line.
        let quiet = arm(Arm::NoHint);
        assert!(quiet.planner.hint.is_none());
        assert_eq!(
            part_names(&quiet),
            ["system prompt", "catalog", "prior", "intent"]
        );
        assert_eq!(quiet.planner.allowlist, base.planner.allowlist);

        // Nothing to take away: the arm's request is the compacted one.
        let plain = plan_arm(&p, &e, BLOG, None, Arm::NoPrior);
        assert_eq!(
            plain.request.messages,
            plan_arm(&p, &e, BLOG, None, Arm::Compacted)
                .request
                .messages
        );
    }

    fn place(r: &PlannedRequest, name: &str) -> Option<usize> {
        r.compaction
            .entries
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.rank)
    }

    /// The ranking puts each request's best entry ahead of higher scores; an attachment's
    /// outline about other tools may reorder the rest, never push those entries back
    /// behind what they were placed ahead of.
    #[test]
    fn an_outline_keeps_each_requests_best_entry_ahead() {
        let p = parts();
        let e = row(Tier::C);
        for instruction in [
            "clone the repo and run its tests, then send a slack message",
            BLOG,
        ] {
            let alone = plan_with(&p, &e, instruction, &[], ATTACHMENT_WEIGHT);
            let placed: Vec<&str> = alone
                .ranking
                .top
                .iter()
                .filter(|x| x.best_for_request.is_some())
                .map(|x| x.name.as_str())
                .collect();
            assert!(!placed.is_empty(), "{instruction}: a placed entry to keep");
            let head = placed
                .iter()
                .filter_map(|n| place(&alone, n))
                .max()
                .unwrap();
            let with = plan_with(
                &p,
                &e,
                instruction,
                &[attach("capture_log.rs", CAPTURE_LOG)],
                ATTACHMENT_WEIGHT,
            );
            assert!(with.attachments[0].outline.len() > 3);
            for n in &placed {
                assert!(
                    place(&with, n).is_some_and(|k| k <= head),
                    "{instruction}: {n} was placed within the first {head}, now {:?}",
                    place(&with, n)
                );
            }
            // The outline still counts: the entry it is about is lifted.
            assert!(
                place(&with, "browser.screenshot").unwrap_or(usize::MAX)
                    < place(&alone, "browser.screenshot").unwrap_or(usize::MAX)
            );
        }
    }

    #[test]
    fn every_entry_has_one_fate_and_they_add_up() {
        let p = parts();
        for tier in [Tier::A, Tier::C] {
            let r = plan_with(
                &p,
                &row(tier),
                "remember this launch note, draft a blog from it and make an illustration",
                &[],
                ATTACHMENT_WEIGHT,
            );
            let c = &r.compaction;
            let kept = c.count(|f| matches!(f, Fate::Kept { .. }));
            let planner = c.count(|f| *f == Fate::RemovedByPlanner);
            let cut = c.count(|f| *f == Fate::CutByBudget);
            assert_eq!(kept + planner + cut, p.catalog.len());
            assert_eq!(kept, c.trim.kept);
            assert_eq!(planner, c.trim.planner_removed);
            assert_eq!(cut, c.trim.cut.len());
            assert!(planner > 0, "the planner narrows this prompt");
            let kept_names: Vec<&str> = c
                .entries
                .iter()
                .filter(|e| matches!(e.fate, Fate::Kept { .. }))
                .map(|e| e.name.as_str())
                .collect();
            assert_eq!(kept_names, c.kept);
            for e in &c.entries {
                let allowed = r.planner.keeps(&e.name);
                assert_eq!(allowed, e.fate != Fate::RemovedByPlanner, "{}", e.name);
            }
            // Trimmed entries name the steps that changed them, and only steps applied.
            let applied: HashSet<TrimStep> = c.trim.dropped.iter().map(|d| d.step).collect();
            for e in &c.entries {
                if let Fate::Kept { trimmed_by } = &e.fate {
                    assert!(trimmed_by.iter().all(|s| applied.contains(s)), "{e:?}");
                }
            }
            if tier == Tier::C {
                assert!(cut > 0 && !applied.is_empty());
                assert!(c.entries.iter().any(
                    |e| matches!(&e.fate, Fate::Kept { trimmed_by } if !trimmed_by.is_empty())
                ));
            }
        }
    }

    #[test]
    fn the_same_inputs_give_the_same_request() {
        let p = parts();
        let e = row(Tier::C);
        let a = [attach("capture_log.rs", CAPTURE_LOG)];
        let one = plan_with(&p, &e, "summarise this file", &a, ATTACHMENT_WEIGHT);
        let two = plan_with(&p, &e, "summarise this file", &a, ATTACHMENT_WEIGHT);
        assert_eq!(one, two);
        assert_eq!(one.request.messages, two.request.messages);
    }

    #[test]
    fn nothing_asked_sends_the_whole_catalog_to_the_budget_without_a_hint() {
        let p = parts();
        let e = row(Tier::C);
        let r = plan_with(&p, &e, "  ", &[], ATTACHMENT_WEIGHT);
        assert!(!r.asked);
        assert!(r.planner.hint.is_none());
        assert_eq!(r.compaction.count(|f| *f == Fate::RemovedByPlanner), 0);
        assert_eq!(
            r.compaction.allowance,
            catalog_allowance(&e.row, "", "  "),
            "the allowance beside the request with no catalog text"
        );
        assert!(r.compaction.trim.cut_policy.starts_with("no intent"));
    }

    #[test]
    fn an_attachment_never_fires_the_planner_and_ranks_only_through_its_outline() {
        let p = parts();
        let e = row(Tier::C);
        let alone = plan_with(&p, &e, "summarise this file", &[], ATTACHMENT_WEIGHT);
        let with = plan_with(
            &p,
            &e,
            "summarise this file",
            &[attach("capture_log.rs", CAPTURE_LOG)],
            ATTACHMENT_WEIGHT,
        );
        assert_eq!(with.planner.categories, alone.planner.categories);
        assert_eq!(with.planner.scores, alone.planner.scores);
        // The same file pasted into the instruction fires categories from its comments.
        let pasted = plan_with(
            &p,
            &e,
            &format!("summarise this file\n{CAPTURE_LOG}"),
            &[],
            ATTACHMENT_WEIGHT,
        );
        assert!(pasted.planner.categories.len() > alone.planner.categories.len());
        // Only definitions reach the ranker: no comment words.
        let a = &with.attachments[0];
        assert_eq!(a.kind, ContentKind::Rust);
        assert!(!a.outline.is_empty());
        assert!(
            a.outline.iter().all(|l| !l.contains("remember")),
            "{:?}",
            a.outline
        );
        assert!(place(&with, "research.summarize").is_some_and(|k| k <= 3));
        // A log has no structure beyond its body: nothing of it is ranked.
        let log = plan_with(
            &p,
            &e,
            "summarise this file",
            &[attach("gateway.log", GATEWAY_LOG)],
            ATTACHMENT_WEIGHT,
        );
        assert!(log.attachments[0].outline.is_empty());
        assert_eq!(log.ranking, alone.ranking);
        // JSON offers its key paths, without their types; broken JSON offers nothing.
        let json = plan_with(&p, &e, "x", &[attach("users.json", USERS)], 0.25);
        assert!(
            json.attachments[0]
                .outline
                .contains(&"$.users[0].email".to_string())
        );
        let broken = plan_with(&p, &e, "x", &[attach("b.json", "{\"a\": ")], 0.25);
        assert_eq!(broken.attachments[0].kind, ContentKind::Json);
        assert!(broken.attachments[0].outline.is_empty());
    }

    #[test]
    fn each_attachment_meets_the_gate_after_the_parts_before_it() {
        let p = parts();
        let e = row(Tier::C);
        let big = "2026-11-22T10:00:00Z INFO request served in 12ms ok\n".repeat(3_000);
        let r = plan_with(
            &p,
            &e,
            "what went wrong?",
            &[attach("users.json", USERS), attach("big.log", &big)],
            ATTACHMENT_WEIGHT,
        );
        let [small, large] = r.attachments.as_slice() else {
            panic!("two attachments")
        };
        assert_eq!(small.gate.admission, Admission::Raw);
        assert_eq!(large.gate.admission, Admission::Briefing);
        assert_eq!(
            large.gate.budget.used_tokens,
            small.gate.budget.used_tokens + small.gate.admitted_tokens
        );
        assert_eq!(
            small.gate.budget.used_tokens,
            r.gate.budget.used_tokens + r.gate.admitted_tokens
        );
        let b = large.gate.briefing.as_ref().unwrap();
        assert!(b.text.contains("big.log"));
        assert!(large.gate.admitted_tokens < large.size.tokens);
        // Both go out as their own parts, the large one as its briefing.
        let sent: Vec<_> = r
            .request
            .parts
            .iter()
            .filter(|p| p.part == "attachment")
            .collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1].name.as_deref(), Some("big.log"));
        assert!(r.request.messages[1].content.contains(&b.text));
        assert!(!r.request.messages[1].content.contains(&big));
        // Their tokens come out of the catalog's allowance, as the request counts them.
        let a = &r.compaction.allowance;
        assert_eq!(
            a.attachments_tokens,
            sent.iter().map(|p| p.tokens).sum::<usize>()
        );
        assert!(a.attachments_tokens > large.gate.admitted_tokens);
        allowance_is_the_requests_parts(&r);
    }

    /// The cases [`ATTACHMENT_WEIGHT`] was chosen on: (instruction, attachment, the entry
    /// the instruction asks for, an entry the attachment's outline is about).
    fn weight_cases() -> Vec<(&'static str, Attachment, Option<&'static str>, &'static str)> {
        let capture = || attach("capture_log.rs", CAPTURE_LOG);
        vec![
            (
                "summarise this file",
                capture(),
                Some("research.summarize"),
                "browser.screenshot",
            ),
            (
                "review this",
                capture(),
                Some("code.review"),
                "browser.screenshot",
            ),
            (
                "keep this for later",
                attach("users.json", USERS),
                Some("memory.store"),
                "memory.store",
            ),
            (
                "make slides from this",
                attach("launch_note.md", LAUNCH_NOTE),
                Some("slides.outline"),
                "slides.outline",
            ),
            // The instruction says nothing about tools: the outline is all there is.
            (
                "what can I do with this?",
                capture(),
                None,
                "browser.screenshot",
            ),
        ]
    }

    /// Prints where each case's entries land for a grid of weights (`cargo test --lib
    /// attachment_weight_grid -- --ignored --nocapture`).
    #[test]
    #[ignore]
    #[allow(clippy::print_stdout)] // a measurement printed for a person, run by hand
    fn attachment_weight_grid() {
        let p = parts();
        let e = row(Tier::C);
        for w in [0.0, 0.1, 0.25, 0.5, 1.0, 2.0] {
            for (instruction, a, asked, about) in weight_cases() {
                let r = plan_with(&p, &e, instruction, std::slice::from_ref(&a), w);
                let top: Vec<&str> = r
                    .ranking
                    .top
                    .iter()
                    .take(3)
                    .map(|x| x.name.as_str())
                    .collect();
                println!(
                    "w={w:<4} {instruction:<26} asked {asked:?} #{:?}  about {about} #{:?}  top {top:?}",
                    asked.and_then(|n| place(&r, n)),
                    place(&r, about)
                );
            }
        }
    }

    #[test]
    fn attachment_weight_is_low_and_measured() {
        let p = parts();
        let e = row(Tier::C);
        for (instruction, a, asked, about) in weight_cases() {
            let alone = plan_with(&p, &e, instruction, &[], ATTACHMENT_WEIGHT);
            let r = plan_with(
                &p,
                &e,
                instruction,
                std::slice::from_ref(&a),
                ATTACHMENT_WEIGHT,
            );
            match asked {
                // What the instruction asks for keeps its place (an outline that agrees
                // with it may lift it, never sink it).
                Some(n) => assert!(
                    place(&r, n).is_some_and(|k| place(&alone, n).is_some_and(|a| k <= a)),
                    "{instruction}: {n} at {:?}, alone {:?}",
                    place(&r, n),
                    place(&alone, n)
                ),
                // With nothing asked, the outline leads.
                None => assert!(place(&r, about).is_some_and(|k| k <= 3), "{instruction}"),
            }
        }
    }
}
