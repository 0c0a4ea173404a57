//! Catalog compaction (DESIGN §2.4): the six trim steps applied while the catalog is over
//! budget, then whole entries cut by rank, and those cut only for room put back, best rank
//! first, where they fit after all; measured exactly as the catalog is sent.
//!
//! The catalog is sent as compact JSON with one entry per line:
//!
//! ```text
//! {"packs":[
//! {…pack…},
//! {…pack…}
//! ],"pipelines":[
//! {…pipeline…}
//! ]}
//! ```
//!
//! Every entry boundary falls right after a newline that ends a punctuation run, which is
//! also a boundary of the o200k/cl100k pre-tokenizers. So the exact token count of the whole
//! text is the sum of the counts of its lines, and each entry is serialised and counted once
//! per trim stage and then reused: a model or tier change is arithmetic, not re-serialising
//! and re-tokenizing the catalog after every step (the anchor's method, kept below as
//! [`compact_reserialising`] for comparison and as a test oracle).

use serde::Serialize;
use std::sync::OnceLock;

use crate::core::budget::Tokenizer;
use crate::core::catalog::{EntryKind, RoutingGuide, TrimStep};
use crate::core::tokens;

/// Stage `s` = trim steps 1..=s applied; stage 0 is the catalog as given.
const STAGES: usize = 7;
const LAST_STAGE: usize = STAGES - 1;

const OPEN_PACKS: &str = "{\"packs\":[\n";
const BETWEEN: &str = "],\"pipelines\":[\n";
const CLOSE: &str = "]}";
const OPEN_NO_PACKS: &str = "{\"packs\":[],\"pipelines\":[\n";
const CLOSE_NO_PIPELINES: &str = "],\"pipelines\":[]}";
const EMPTY: &str = "{\"packs\":[],\"pipelines\":[]}";

/// What the catalog may take, in tokens as sent and (optionally) in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Allowance {
    pub tokens: usize,
    pub bytes: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    pub step: TrimStep,
    pub saved_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutEntry {
    pub name: String,
    pub kind: EntryKind,
    /// Bytes of the entry's line at the stage it was cut from.
    pub bytes: usize,
    /// Cut by itself, before any other: even with every trim step applied it does not fit
    /// the allowance alone, so keeping it would have cost every other entry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alone_over: bool,
    /// Cut by the crowding rule ([`PreparedCatalog::compact_among`]): fully trimmed it takes
    /// more than half the allowance, or is one of k entries that each take more than a k-th
    /// of half, and cutting it kept at least k more entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crowds_out: Option<CrowdsOut>,
}

/// Why an entry was cut by the crowding rule, in figures every screen words the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CrowdsOut {
    /// What the entry alone, fully trimmed, takes of the allowance (the larger of its bytes'
    /// and its tokens' share), in whole percent.
    pub share_percent: usize,
    /// How many entries keeping it would have cut.
    pub would_cut: usize,
    /// How many other kept entries it took, with it, to crowd the rest out (0: it alone
    /// takes more than half the allowance).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub with_others: usize,
    /// What it and those others take of the allowance together, in whole percent (more than
    /// half); given only with others.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub together_percent: usize,
}

impl CrowdsOut {
    /// "takes 98 % of the allowance fully trimmed; keeping it would cut 20", or with others "takes 49 %
    /// of the allowance (with 1 other, 98 %); keeping it would cut 18".
    pub fn explain(&self) -> String {
        let with = match self.with_others {
            0 => String::new(),
            1 => format!(" (with 1 other, {} %)", self.together_percent),
            n => format!(" (with {n} others, {} %)", self.together_percent),
        };
        format!(
            "takes {} % of the allowance fully trimmed{with}; keeping it would cut {}",
            self.share_percent, self.would_cut
        )
    }
}

impl CutEntry {
    /// Why this entry went, when it was not simply its turn in the cut order.
    pub fn reason(&self) -> Option<String> {
        if self.alone_over {
            Some("alone over the allowance".into())
        } else {
            self.crowds_out.map(|c| c.explain())
        }
    }
}

/// The Trim record (DESIGN §2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimRecord {
    pub before_bytes: usize,
    pub after_bytes: usize,
    pub before_tokens: usize,
    pub after_tokens: usize,
    pub exact_tokens: bool,
    pub dropped: Vec<Dropped>,
    pub kept: usize,
    pub total: usize,
    pub cut: Vec<CutEntry>,
    /// How many trim steps changed what is sent (`dropped`'s length): what every screen
    /// calls "trim steps applied". Tester 32 F3: this field had carried the level below.
    pub steps_applied: usize,
    /// The trim level the result reached (0 = untouched, 6 = every step): steps 1 to this
    /// were tried; those that saved nothing are not in `dropped`.
    pub trim_level: u8,
    /// Whether the result fits the allowance. False only when even an empty catalog does not.
    pub fits: bool,
    /// How the cut order was chosen.
    pub cut_policy: String,
    /// Entries the pre-flight planner filtered out before compaction.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub planner_removed: usize,
}

/// For `skip_serializing_if`: a count of nothing is left out.
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl TrimRecord {
    /// What every screen says when nothing was trimmed and nothing cut (`None` otherwise):
    /// the full catalog fits, or — when the planner removed entries first — the entries it
    /// kept fit (tester 10 T10-8: "the full catalog fits" was said of 13 of 72 entries).
    pub fn untouched_note(&self) -> Option<String> {
        if !self.dropped.is_empty() || !self.cut.is_empty() {
            return None;
        }
        Some(if self.planner_removed == 0 {
            "untouched: the full catalog fits".to_string()
        } else {
            format!("untouched: the planner's {}/{} fit", self.kept, self.total)
        })
    }

    /// A cut entry's size as every screen gives it: its line's bytes at the trim level the
    /// catalog reached, the level said beside them, and why it went first if it did (`221
    /// bytes trimmed to step 6`, `1,409 bytes untrimmed, alone over the allowance`). One
    /// entry shows other figures in other windows, so the level is said (tester 32 F5; the
    /// console's entry view had said only "cut by the budget": tester 34 F16).
    pub fn cut_size(&self, c: &CutEntry) -> String {
        let level = if self.trim_level == 0 {
            "untrimmed".to_string()
        } else {
            format!("trimmed to step {}", self.trim_level)
        };
        format!(
            "{} bytes {level}{}",
            crate::core::text::thousands(c.bytes),
            c.reason().map(|r| format!(", {r}")).unwrap_or_default()
        )
    }

    /// Why entries were cut, as every screen words it: the policy, how many went by
    /// themselves because each alone is over the allowance, and each entry cut by the
    /// crowding rule with its figures.
    pub fn cut_note(&self) -> String {
        let mut note = match self.cut.iter().filter(|c| c.alone_over).count() {
            0 => self.cut_policy.clone(),
            1 => format!(
                "{}; 1 entry alone over the allowance cut first",
                self.cut_policy
            ),
            n => format!(
                "{}; {n} entries each alone over the allowance cut first",
                self.cut_policy
            ),
        };
        for c in self.cut.iter().filter_map(|c| c.crowds_out) {
            note.push_str(&format!("; 1 entry cut as it {}", c.explain()));
        }
        note
    }
}

/// The order in which whole entries are cut, first cut first, and why that order.
#[derive(Debug, Clone, PartialEq)]
pub struct CutOrder {
    pub order: Vec<usize>,
    pub policy: String,
    /// What the order knows of each entry's worth, by entry index (empty: nothing beyond
    /// the order), read by the crowding rule ([`CutOrder::clearly_above`]).
    pub relevance: Vec<Relevance>,
}

/// One entry's worth to the crowding rule.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Relevance {
    /// The ranking's score (0: unranked, or no prompt).
    pub score: f64,
    /// Kept ahead of the others by the order's own rule: a request's best entry (with a
    /// prompt), a pipeline that supersedes packs (without one).
    pub first: bool,
    /// With a prompt, the request (0-based) it was placed first for.
    pub request: Option<usize>,
}

/// With a prompt, an entry scoring at least this many times the best of the entries its cut
/// would save ranks clearly above them, and is not cut to save them.
pub const CLEARLY_ABOVE: f64 = 2.0;

impl CutOrder {
    /// With no intent yet: cut from the end of the catalog, keeping pipelines that
    /// supersede packs until last.
    pub fn from_end(guide: &RoutingGuide) -> CutOrder {
        let packs = guide.packs.len();
        let superseding =
            |i: usize| i >= packs && !guide.pipelines[i - packs].metadata.supersedes.is_empty();
        let n = guide.entry_count();
        let mut order: Vec<usize> = (0..n).rev().filter(|&i| !superseding(i)).collect();
        order.extend((0..n).rev().filter(|&i| superseding(i)));
        CutOrder {
            order,
            policy: "no intent: cut from the end, superseding pipelines last".into(),
            relevance: (0..n)
                .map(|i| Relevance {
                    score: 0.0,
                    first: superseding(i),
                    request: None,
                })
                .collect(),
        }
    }

    /// From a ranking, best first: the lowest-ranked entry is cut first. Entries the
    /// ranking does not name are cut before any ranked one.
    pub fn from_ranking(
        ranked_best_first: &[usize],
        total: usize,
        policy: impl Into<String>,
    ) -> CutOrder {
        let mut seen = vec![false; total];
        let mut order: Vec<usize> = Vec::with_capacity(total);
        for &i in ranked_best_first.iter().rev() {
            if i < total && !seen[i] {
                seen[i] = true;
                order.push(i);
            }
        }
        let unranked: Vec<usize> = (0..total).rev().filter(|&i| !seen[i]).collect();
        order.splice(0..0, unranked);
        CutOrder {
            order,
            policy: policy.into(),
            relevance: Vec::new(),
        }
    }

    /// The order with what its ranking said of each entry (by entry index).
    pub fn with_relevance(mut self, relevance: Vec<Relevance>) -> CutOrder {
        self.relevance = relevance;
        self
    }

    /// Whether entry `big` ranks clearly above every entry of `saved`, so the crowding rule
    /// does not cut it to save them: it is kept first by the order's own rule (a request's
    /// best entry, a superseding pipeline) and none of them is, nor scores the same (a best
    /// entry by a tie won it by its place in the catalog: tester 10 T10-6), or it scores at
    /// least [`CLEARLY_ABOVE`] times the best of them.
    pub fn clearly_above(&self, big: usize, saved: &[usize]) -> bool {
        let of = |i: usize| self.relevance.get(i).copied().unwrap_or_default();
        let b = of(big);
        // Another entry placed first for the same request, scoring as much, answers it as
        // well: the big one is not that request's only answer (tester 10 T10-6: `big0` and
        // `small0` tied for one request, and the tie spared the big one).
        let rival =
            b.request.is_some()
                && self.relevance.iter().enumerate().any(|(i, r)| {
                    i != big && r.first && r.request == b.request && r.score >= b.score
                });
        // Without a prompt every score is 0: nothing ties, `first` alone decides.
        let ties = |i: usize| {
            b.score > 0.0 && (of(i).score - b.score).abs() <= 1e-9 * b.score.abs().max(1.0)
        };
        if b.first && !rival && saved.iter().all(|&i| !of(i).first && !ties(i)) {
            return true;
        }
        let best = saved.iter().map(|&i| of(i).score).fold(0.0, f64::max);
        b.score > 0.0 && b.score >= CLEARLY_ABOVE * best
    }
}

/// A compaction result: the text as sent and the record of how it got there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    pub text: String,
    pub trim: TrimRecord,
    /// Entry indices kept, in catalog order (packs first).
    pub kept: Vec<usize>,
}

struct EntryMemo {
    kind: EntryKind,
    /// Index within `packs` or `pipelines`.
    index: usize,
    text: [OnceLock<String>; STAGES],
    /// tokens[tokenizer][stage][is_last_in_section]: the entry's line with ",\n" or "\n".
    tokens: [[[OnceLock<usize>; 2]; STAGES]; TOKENIZERS],
}

/// A catalog made ready for repeated compaction: each entry's text and token count at
/// each trim stage is computed on first need and kept.
pub struct PreparedCatalog {
    guide: RoutingGuide,
    /// What reading the catalog noted without refusing it (a name given twice): carried
    /// with it, so every request planned from it says the same.
    warnings: Vec<String>,
    entries: Vec<EntryMemo>,
    /// Index of the first pipeline in `entries`.
    first_pipeline: usize,
    /// frame_tokens[tokenizer][packs * 2 + pipelines]: the fixed text's count, by which
    /// sections are non-empty, so summing a kept set counts no text.
    frame_tokens: [[OnceLock<usize>; 4]; TOKENIZERS],
    /// How lists show the entries' names (names that print alike spelled apart).
    names: crate::core::terminal_text::NamesShown,
}

impl std::fmt::Debug for PreparedCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCatalog")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// The tokenizers a catalog keeps counts for: o200k, cl100k and the estimate.
const TOKENIZERS: usize = 3;

/// Each tokenizer's place in the memo. The estimate is counted line by line as the BPE
/// tokenizers are: it adds up over lines ([`tokens::estimate`]), so the sum is the
/// estimate of the text as sent.
fn tokenizer_slot(t: Tokenizer) -> usize {
    match t {
        Tokenizer::O200k => 0,
        Tokenizer::Cl100k => 1,
        Tokenizer::Estimate => 2,
    }
}

/// Serialise a catalog value. Our types hold only strings, lists and JSON values with
/// string keys, so serialisation cannot fail; an empty object stands in if it ever did.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

impl PreparedCatalog {
    pub fn new(guide: RoutingGuide) -> PreparedCatalog {
        let memo = |kind, index| EntryMemo {
            kind,
            index,
            text: std::array::from_fn(|_| OnceLock::new()),
            tokens: std::array::from_fn(|_| {
                std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new()))
            }),
        };
        let mut entries: Vec<EntryMemo> = (0..guide.packs.len())
            .map(|i| memo(EntryKind::Pack, i))
            .collect();
        let first_pipeline = entries.len();
        entries.extend((0..guide.pipelines.len()).map(|i| memo(EntryKind::Pipeline, i)));
        let names = crate::core::terminal_text::NamesShown::new(
            guide
                .packs
                .iter()
                .map(|p| p.name.as_str())
                .chain(guide.pipelines.iter().map(|p| p.id.as_str())),
        );
        PreparedCatalog {
            guide,
            warnings: Vec::new(),
            entries,
            first_pipeline,
            frame_tokens: std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new())),
            names,
        }
    }

    /// How lists show the entries' names: those that print like another spelled apart.
    pub fn names_shown(&self) -> &crate::core::terminal_text::NamesShown {
        &self.names
    }

    /// The catalog with what its import noted (see [`PreparedCatalog::warnings`]).
    pub fn with_warnings(mut self, warnings: Vec<String>) -> PreparedCatalog {
        self.warnings = warnings;
        self
    }

    /// What reading the catalog noted without refusing it, as its import worded it.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn guide(&self) -> &RoutingGuide {
        &self.guide
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entry_name(&self, i: usize) -> &str {
        let e = &self.entries[i];
        match e.kind {
            EntryKind::Pack => &self.guide.packs[e.index].name,
            EntryKind::Pipeline => &self.guide.pipelines[e.index].id,
        }
    }

    pub fn entry_kind(&self, i: usize) -> EntryKind {
        self.entries[i].kind
    }

    /// The entry's compact JSON with trim steps 1..=stage applied.
    pub fn entry_text(&self, i: usize, stage: usize) -> &str {
        let e = &self.entries[i];
        e.text[stage].get_or_init(|| match e.kind {
            EntryKind::Pack => {
                let mut p = self.guide.packs[e.index].clone();
                TrimStep::ALL[..stage].iter().for_each(|&s| p.apply(s));
                to_json(&p)
            }
            EntryKind::Pipeline => {
                let mut p = self.guide.pipelines[e.index].clone();
                TrimStep::ALL[..stage].iter().for_each(|&s| p.apply(s));
                to_json(&p)
            }
        })
    }

    fn line_bytes(&self, i: usize, stage: usize, last: bool) -> usize {
        self.entry_text(i, stage).len() + if last { 1 } else { 2 }
    }

    fn line_tokens(
        &self,
        i: usize,
        stage: usize,
        last: bool,
        slot: usize,
        tokenizer: Tokenizer,
    ) -> usize {
        *self.entries[i].tokens[slot][stage][last as usize].get_or_init(|| {
            let mut line = String::with_capacity(self.entry_text(i, stage).len() + 2);
            line.push_str(self.entry_text(i, stage));
            line.push_str(if last { "\n" } else { ",\n" });
            tokens::count(tokenizer, &line).tokens
        })
    }

    /// The fixed text around the entries, by which sections are non-empty.
    fn frame(kept: &[usize], first_pipeline: usize) -> (&'static [&'static str], usize) {
        let packs = kept.partition_point(|&i| i < first_pipeline);
        let pipes = kept.len() - packs;
        (Self::frame_parts(packs > 0, pipes > 0), packs)
    }

    fn frame_parts(packs: bool, pipes: bool) -> &'static [&'static str] {
        match (packs, pipes) {
            (true, true) => &[OPEN_PACKS, BETWEEN, CLOSE],
            (false, true) => &[OPEN_NO_PACKS, CLOSE],
            (true, false) => &[OPEN_PACKS, CLOSE_NO_PIPELINES],
            (false, false) => &[EMPTY],
        }
    }

    fn frame_bytes(packs: bool, pipes: bool) -> usize {
        Self::frame_parts(packs, pipes)
            .iter()
            .map(|p| p.len())
            .sum()
    }

    /// The frame's tokens, each part counted by itself as the sum always has.
    fn frame_tokens(&self, packs: bool, pipes: bool, slot: usize, tokenizer: Tokenizer) -> usize {
        let at = usize::from(packs) * 2 + usize::from(pipes);
        *self.frame_tokens[slot][at].get_or_init(|| {
            Self::frame_parts(packs, pipes)
                .iter()
                .map(|p| tokens::count(tokenizer, p).tokens)
                .sum()
        })
    }

    /// Whether entry `k` of `kept` is the last of its section.
    fn is_last(kept: &[usize], k: usize, packs: usize) -> bool {
        k + 1 == kept.len() || k + 1 == packs
    }

    /// Bytes of the catalog text with `kept` entries at `stage`.
    pub fn bytes(&self, stage: usize, kept: &[usize]) -> usize {
        let (parts, packs) = Self::frame(kept, self.first_pipeline);
        let frame: usize = parts.iter().map(|p| p.len()).sum();
        frame
            + kept
                .iter()
                .enumerate()
                .map(|(k, &i)| self.line_bytes(i, stage, Self::is_last(kept, k, packs)))
                .sum::<usize>()
    }

    /// Tokens of the catalog text with `kept` entries at `stage`: exact for BPE tokenizers.
    pub fn tokens(&self, stage: usize, kept: &[usize], tokenizer: Tokenizer) -> usize {
        let slot = tokenizer_slot(tokenizer);
        let (_, packs) = Self::frame(kept, self.first_pipeline);
        let frame = self.frame_tokens(packs > 0, kept.len() > packs, slot, tokenizer);
        frame
            + kept
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    self.line_tokens(i, stage, Self::is_last(kept, k, packs), slot, tokenizer)
                })
                .sum::<usize>()
    }

    /// The catalog text with `kept` entries at `stage`, exactly as it is sent.
    pub fn render(&self, stage: usize, kept: &[usize]) -> String {
        let (parts, packs) = Self::frame(kept, self.first_pipeline);
        let mut out = String::with_capacity(self.bytes(stage, kept));
        out.push_str(parts[0]);
        for (k, &i) in kept.iter().enumerate() {
            out.push_str(self.entry_text(i, stage));
            let last = Self::is_last(kept, k, packs);
            out.push_str(if last { "\n" } else { ",\n" });
            if last && k + 1 == packs && parts.len() == 3 {
                out.push_str(parts[1]);
            }
        }
        if parts.len() > 1 {
            out.push_str(parts[parts.len() - 1]);
        }
        out
    }

    /// The full catalog, untouched, as it would be sent.
    pub fn render_full(&self) -> String {
        let all: Vec<usize> = (0..self.len()).collect();
        self.render(0, &all)
    }

    /// Does this selection fit? Bytes first: a token can never be shorter than a byte,
    /// so tokens are only counted when the bytes leave the answer open.
    fn fits(
        &self,
        stage: usize,
        kept: &[usize],
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> bool {
        verdict(self.bytes(stage, kept), allowance, || {
            self.tokens(stage, kept, tokenizer)
        })
    }

    /// An empty [`Tally`].
    fn tally_empty() -> Tally {
        Tally {
            bytes: 0,
            tokens: Some(0),
            last_pack: None,
            last_pipe: None,
        }
    }

    /// The tally of `kept` (in catalog order, each once) at `stage`; tokens not yet counted.
    fn tally_of(&self, stage: usize, kept: &[usize]) -> Tally {
        let mut t = Self::tally_empty();
        t.tokens = None;
        for &i in kept {
            self.tally_add(&mut t, i, stage, None);
        }
        t
    }

    /// `i` (not in it) added to the tally; its tokens too when the tally has them.
    fn tally_add(&self, t: &mut Tally, i: usize, stage: usize, tokenizer: Option<Tokenizer>) {
        t.bytes += self.line_bytes(i, stage, false);
        if let (Some(sum), Some(tok)) = (t.tokens.as_mut(), tokenizer) {
            *sum += self.comma_tokens(i, stage, tok);
        }
        let last = if i < self.first_pipeline {
            &mut t.last_pack
        } else {
            &mut t.last_pipe
        };
        *last = Some(last.map_or(i, |l| l.max(i)));
    }

    /// The line's tokens with its comma.
    fn comma_tokens(&self, i: usize, stage: usize, tokenizer: Tokenizer) -> usize {
        self.line_tokens(i, stage, false, tokenizer_slot(tokenizer), tokenizer)
    }

    /// What [`Self::bytes`] says of the tallied set.
    fn tally_bytes(t: &Tally) -> usize {
        let (packs, pipes) = (t.last_pack.is_some(), t.last_pipe.is_some());
        // The last line of each section goes without its comma.
        Self::frame_bytes(packs, pipes) + t.bytes - usize::from(packs) - usize::from(pipes)
    }

    /// What [`Self::tokens`] says of the tallied set. Its lines' tokens must have been
    /// counted ([`Tally::tokens`]); the estimate needs none.
    fn tally_tokens(&self, t: &Tally, stage: usize, tokenizer: Tokenizer) -> usize {
        let slot = tokenizer_slot(tokenizer);
        let frame = self.frame_tokens(
            t.last_pack.is_some(),
            t.last_pipe.is_some(),
            slot,
            tokenizer,
        );
        debug_assert!(t.tokens.is_some(), "the tally's tokens are counted first");
        // Each section's last line is counted without its comma: swap its two counts (the
        // sum holds the comma count, so adding first cannot go below zero).
        let mut sum = t.tokens.unwrap_or(0);
        for last in [t.last_pack, t.last_pipe].into_iter().flatten() {
            sum = (sum + self.line_tokens(last, stage, true, slot, tokenizer))
                .saturating_sub(self.line_tokens(last, stage, false, slot, tokenizer));
        }
        frame + sum
    }

    /// Trim steps applied to `all` in order while it is over the allowance: the stage
    /// reached, the steps that changed something with what each saved, and whether it fits.
    fn trim_stage(
        &self,
        all: &[usize],
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> (usize, Vec<Dropped>, bool) {
        let mut prev_bytes = self.bytes(0, all);
        let mut stage = 0;
        let mut dropped = Vec::new();
        let mut fits = self.fits(0, all, allowance, tokenizer);
        while !fits && stage < LAST_STAGE {
            stage += 1;
            let bytes = self.bytes(stage, all);
            if bytes < prev_bytes {
                dropped.push(Dropped {
                    step: TrimStep::ALL[stage - 1],
                    saved_bytes: prev_bytes - bytes,
                });
            }
            prev_bytes = bytes;
            fits = self.fits(stage, all, allowance, tokenizer);
        }
        (stage, dropped, fits)
    }

    /// The entries of `kept` that crowd the rest out, to the crowding rule, and how many
    /// more entries a cut of one of them must keep: the smallest `k` for which at least `k`
    /// entries each take, alone and fully trimmed, more than a `k`-th of half the allowance
    /// (one over half, two over a quarter each, three over a sixth each, …), and those
    /// entries, largest first (bytes as sent at `stage`; of equal ones, the one `order`
    /// cuts sooner first). None when there is no such `k`.
    fn crowding_group(
        &self,
        stage: usize,
        kept: &[usize],
        order: &[usize],
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> Option<(Vec<usize>, usize)> {
        let levels: Vec<(usize, usize, usize)> = kept
            .iter()
            .map(|&i| {
                let bytes = self.bytes(stage, &[i]);
                let by_bytes = crowding_level(bytes, None, allowance);
                // A token is never shorter than a byte: counting them can only matter when
                // a text of `bytes` tokens would reach a lower level.
                let at_most = crowding_level(0, Some(bytes), allowance);
                let level = if at_most < by_bytes.min(kept.len() + 1) {
                    crowding_level(bytes, Some(self.tokens(stage, &[i], tokenizer)), allowance)
                } else {
                    by_bytes
                };
                (level, bytes, i)
            })
            .collect();
        let k = crowding_k(levels.iter().map(|l| l.0))?;
        let mut position = vec![usize::MAX; self.len()];
        order.iter().enumerate().for_each(|(n, &i)| position[i] = n);
        let mut group: Vec<(usize, usize)> = levels
            .into_iter()
            .filter(|l| l.0 <= k)
            .map(|(_, bytes, i)| (bytes, i))
            .collect();
        group.sort_by(|a, b| b.0.cmp(&a.0).then(position[a.1].cmp(&position[b.1])));
        Some((group.into_iter().map(|(_, i)| i).collect(), k))
    }

    /// Cut `order` (less the entries `out`) from its front until `all` (less `out`) fits:
    /// the smallest number of cuts that fits. Size shrinks as entries go, so search, then
    /// confirm by measuring forward in case a comma moved the count by a token. `summed`
    /// (`all` in catalog order, `order` of entries of `all`, each once): by running sums
    /// ([`Self::cut_in_order_summed`]), the same answer without measuring each try.
    #[allow(clippy::too_many_arguments)]
    fn cut_in_order(
        &self,
        stage: usize,
        all: &[usize],
        order: &[usize],
        out: &[bool],
        allowance: Allowance,
        tokenizer: Tokenizer,
        summed: bool,
    ) -> OrderCut {
        if summed {
            return self.cut_in_order_summed(stage, all, order, out, allowance, tokenizer);
        }
        let order: Vec<usize> = order.iter().copied().filter(|&i| !out[i]).collect();
        let kept_after = |k: usize| -> Vec<usize> {
            let mut gone = out.to_vec();
            order[..k].iter().for_each(|&i| gone[i] = true);
            all.iter().copied().filter(|&i| !gone[i]).collect()
        };
        let (mut lo, mut hi) = (0usize, order.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.fits(stage, &kept_after(mid), allowance, tokenizer) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut k = lo.min(order.len());
        let mut kept = kept_after(k);
        let mut fits = self.fits(stage, &kept, allowance, tokenizer);
        while !fits && k < order.len() {
            k += 1;
            kept = kept_after(k);
            fits = self.fits(stage, &kept, allowance, tokenizer);
        }
        OrderCut {
            cuts: order[..k].to_vec(),
            kept,
            fits,
            put_back: Vec::new(),
        }
    }

    /// [`Self::cut_in_order`] by sums: the set left after `k` cuts is what the order never
    /// cuts plus the order from `k` on, so its figures are a fixed part plus suffix sums of
    /// the lines (each with its comma), the frame's, and each section's last line without
    /// its comma; the last of a section is a suffix maximum. The same tries, each O(1), so
    /// the crowding rule's search per candidate is linear (tester 15 F3: it was measuring
    /// the whole kept set at every try). Tokens are counted from the end only as far as a
    /// try needs them, as measuring that try's set would.
    fn cut_in_order_summed(
        &self,
        stage: usize,
        all: &[usize],
        order: &[usize],
        out: &[bool],
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> OrderCut {
        let order: Vec<usize> = order.iter().copied().filter(|&i| !out[i]).collect();
        let n = order.len();
        let mut in_order = vec![false; self.len()];
        order.iter().for_each(|&i| in_order[i] = true);
        let mut fixed = Self::tally_empty();
        for &i in all.iter().filter(|&&i| !out[i] && !in_order[i]) {
            self.tally_add(&mut fixed, i, stage, Some(tokenizer));
        }
        // at[k]: what is left after k cuts, but its tokens (tokens_at[k], once counted).
        let mut at = vec![fixed; n + 1];
        for p in (0..n).rev() {
            at[p] = at[p + 1];
            self.tally_add(&mut at[p], order[p], stage, None);
        }
        let mut tokens_at = vec![0usize; n + 1];
        tokens_at[n] = fixed.tokens.unwrap_or(0);
        let mut counted = n;
        let mut fits_at = |k: usize| {
            let mut t = at[k];
            verdict(Self::tally_bytes(&t), allowance, || {
                while counted > k {
                    counted -= 1;
                    tokens_at[counted] = tokens_at[counted + 1]
                        + self.comma_tokens(order[counted], stage, tokenizer);
                }
                t.tokens = Some(tokens_at[k]);
                self.tally_tokens(&t, stage, tokenizer)
            })
        };
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fits_at(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut k = lo.min(n);
        let mut fits = fits_at(k);
        while !fits && k < n {
            k += 1;
            fits = fits_at(k);
        }
        let cuts = order[..k].to_vec();
        let mut gone = out.to_vec();
        cuts.iter().for_each(|&i| gone[i] = true);
        OrderCut {
            cuts,
            kept: all.iter().copied().filter(|&i| !gone[i]).collect(),
            fits,
            put_back: Vec::new(),
        }
    }

    /// Whether no `target` entries of `all` (less `out`) fit together at `stage`: a lower
    /// bound of any such set's bytes (each line without its comma, no frame) is over the
    /// cap, or over the token allowance along with one of its tokens (each line with its
    /// comma, the two that may end a section left out, and no frame). Lines' tokens are
    /// counted only when the bytes leave it open.
    fn none_fit(
        &self,
        stage: usize,
        all: &[usize],
        out: &[bool],
        target: usize,
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> bool {
        let left: Vec<usize> = all.iter().copied().filter(|&i| !out[i]).collect();
        if left.len() < target {
            return true;
        }
        let least = |mut sizes: Vec<usize>, take: usize| -> usize {
            sizes.sort_unstable();
            sizes[..take].iter().sum()
        };
        let bytes = least(
            left.iter()
                .map(|&i| self.line_bytes(i, stage, true))
                .collect(),
            target,
        );
        if allowance.bytes.is_some_and(|cap| bytes > cap) {
            return true;
        }
        if bytes <= allowance.tokens {
            return false;
        }
        let tokens = least(
            left.iter()
                .map(|&i| self.comma_tokens(i, stage, tokenizer))
                .collect(),
            target.saturating_sub(2),
        );
        tokens > allowance.tokens
    }

    /// Whether a text of at least `least` bytes is surely over the allowance: over the byte
    /// cap, or (estimated tokens, never fewer than [`tokens::estimate_at_least`] of the
    /// bytes, line by line and so in sum) over the token allowance too.
    fn surely_over(least: usize, allowance: Allowance, tokenizer: Tokenizer) -> bool {
        allowance.bytes.is_some_and(|cap| least > cap)
            || (matches!(tokenizer, Tokenizer::Estimate)
                && tokens::estimate_at_least(least) > allowance.tokens)
    }

    /// [`Self::cut_in_order`], then every entry it cut put back, best rank first (the last
    /// cut first), when it fits beside what is kept, measured exactly as sent: a later cut
    /// may have made room for an entry cut before it (task Q4: a big entry ranked among 20
    /// small ones was cut after 10 of them, and those 10 stayed cut though they fit). The
    /// entries still cut are in the order they were cut.
    #[allow(clippy::too_many_arguments)]
    fn cut_and_refill(
        &self,
        stage: usize,
        all: &[usize],
        order: &[usize],
        out: &[bool],
        allowance: Allowance,
        tokenizer: Tokenizer,
        summed: bool,
    ) -> OrderCut {
        let mut now = self.cut_in_order(stage, all, order, out, allowance, tokenizer, summed);
        if !now.fits {
            return now;
        }
        let back = self.refill(
            stage,
            &mut now.kept,
            &now.cuts,
            allowance,
            tokenizer,
            summed,
        );
        now.cuts.retain(|&i| !back[i]);
        now.put_back = (0..self.len()).filter(|&i| back[i]).collect();
        now
    }

    /// Each of `cuts` put back into `kept` (which fits), the last cut first, when it fits
    /// beside what is kept at `stage`, measured exactly as sent. Which were put back.
    /// `summed` (`kept` in catalog order, each once, `cuts` not in it): each try is the
    /// kept set's running [`Tally`] plus the entry, not a measure of the whole set.
    fn refill(
        &self,
        stage: usize,
        kept: &mut Vec<usize>,
        cuts: &[usize],
        allowance: Allowance,
        tokenizer: Tokenizer,
        summed: bool,
    ) -> Vec<bool> {
        if summed {
            return self.refill_summed(stage, kept, cuts, allowance, tokenizer);
        }
        let mut back = vec![false; self.len()];
        // An entry adds at least its line (without the comma) to the text: the frame and
        // the line before it only grow. Over the cap by that alone, it is not measured.
        let mut bytes = self.bytes(stage, kept);
        for &i in cuts.iter().rev() {
            if Self::surely_over(
                bytes + self.line_bytes(i, stage, true),
                allowance,
                tokenizer,
            ) {
                continue;
            }
            let at = kept.partition_point(|&j| j < i);
            kept.insert(at, i);
            if self.fits(stage, kept, allowance, tokenizer) {
                back[i] = true;
                bytes = self.bytes(stage, kept);
            } else {
                kept.remove(at);
            }
        }
        back
    }

    /// [`Self::refill`] with the kept set's figures kept as running sums.
    fn refill_summed(
        &self,
        stage: usize,
        kept: &mut Vec<usize>,
        cuts: &[usize],
        allowance: Allowance,
        tokenizer: Tokenizer,
    ) -> Vec<bool> {
        let mut back = vec![false; self.len()];
        let mut tally = self.tally_of(stage, kept);
        for &i in cuts.iter().rev() {
            let bytes = Self::tally_bytes(&tally);
            if Self::surely_over(
                bytes + self.line_bytes(i, stage, true),
                allowance,
                tokenizer,
            ) {
                continue;
            }
            let mut with = tally;
            self.tally_add(&mut with, i, stage, Some(tokenizer));
            let fits = verdict(Self::tally_bytes(&with), allowance, || {
                // Counted once, when first needed, then kept up as entries come back.
                if with.tokens.is_none() {
                    let sum = kept
                        .iter()
                        .map(|&j| self.comma_tokens(j, stage, tokenizer))
                        .sum();
                    tally.tokens = Some(sum);
                    with.tokens = Some(sum + self.comma_tokens(i, stage, tokenizer));
                }
                self.tally_tokens(&with, stage, tokenizer)
            });
            if fits {
                kept.insert(kept.partition_point(|&j| j < i), i);
                back[i] = true;
                tally = with;
            }
        }
        back
    }

    /// Compact to the allowance (DESIGN §2.4). Same input, same bytes out.
    pub fn compact(
        &self,
        allowance: Allowance,
        tokenizer: Tokenizer,
        cut_order: &CutOrder,
    ) -> Compacted {
        self.compact_among(allowance, tokenizer, cut_order, None)
    }

    /// As [`compact`](Self::compact), over only the `allowed` entries (the planner's
    /// allowlist, in catalog order). `before_*` still measure the whole catalog.
    pub fn compact_among(
        &self,
        allowance: Allowance,
        tokenizer: Tokenizer,
        cut_order: &CutOrder,
        allowed: Option<&[usize]>,
    ) -> Compacted {
        self.compact_among_by(allowance, tokenizer, cut_order, allowed, true)
    }

    /// [`Self::compact_among`]; with `sums`, the cut and the put-back measure by running
    /// sums where the entries allow it (each once, in catalog order), else by measuring
    /// every set they try, as the tests' oracle of the sums.
    fn compact_among_by(
        &self,
        allowance: Allowance,
        tokenizer: Tokenizer,
        cut_order: &CutOrder,
        allowed: Option<&[usize]>,
        sums: bool,
    ) -> Compacted {
        let everything: Vec<usize> = (0..self.len()).collect();
        let before_bytes = self.bytes(0, &everything);
        let before_tokens = self.tokens(0, &everything, tokenizer);
        let all: Vec<usize> = match allowed {
            Some(a) => a.iter().copied().filter(|&i| i < self.len()).collect(),
            None => everything,
        };
        let mut is_allowed = vec![false; self.len()];
        all.iter().for_each(|&i| is_allowed[i] = true);
        let order: Vec<usize> = cut_order
            .order
            .iter()
            .copied()
            .filter(|&i| i < self.len() && is_allowed[i])
            .collect();
        let planner_removed = self.len() - all.len();
        // Running sums stand for measuring a set when each entry is in it once, in catalog
        // order; an allowlist out of that order or a cut order that repeats an entry is
        // measured set by set, as it always was.
        let mut seen = vec![false; self.len()];
        let summed = sums
            && all.windows(2).all(|w| w[0] < w[1])
            && order
                .iter()
                .all(|&i| !std::mem::replace(&mut seen[i], true));
        // An entry that alone, fully trimmed, is over the allowance can never be sent: it is
        // cut by itself, so it does not take the entries cut before it (tester 6 F3).
        let mut alone_over = vec![false; self.len()];
        if !self.fits(0, &all, allowance, tokenizer) {
            for &i in &order {
                alone_over[i] = !self.fits(LAST_STAGE, &[i], allowance, tokenizer);
            }
        }
        let oversized: Vec<usize> = order.iter().copied().filter(|&i| alone_over[i]).collect();
        let all: Vec<usize> = all.into_iter().filter(|&i| !alone_over[i]).collect();
        let order: Vec<usize> = order.into_iter().filter(|&i| !alone_over[i]).collect();
        let (mut stage, mut dropped, mut fits) = self.trim_stage(&all, allowance, tokenizer);
        let mut all = all;
        let mut order = order;
        let mut cut: Vec<usize> = oversized;
        let mut crowds: Vec<Option<CrowdsOut>> = vec![None; self.len()];
        // The order's cut when the crowding rule moved nothing: the final cut is that one.
        let mut settled: Option<OrderCut> = None;
        if !fits {
            // The crowding rule, judged fully trimmed (where entries must be cut): the kept
            // entries that crowd the rest out are, for the smallest k that works, at least k
            // of them each over a k-th of half the allowance ([`Self::crowding_group`]). The
            // largest of them whose cut keeps at least k more entries (so an entry is only
            // traded for entries many times smaller; k = 1 is one entry over half, cut when
            // that keeps one more), and that does not rank clearly above every entry its cut
            // would save, is cut instead; then the rule looks again, until no such cut is
            // left. Like one alone over the allowance, what it cut is set aside and the rest
            // trimmed only as far as it needs.
            let mut out = vec![false; self.len()];
            let mut now =
                self.cut_and_refill(stage, &all, &order, &out, allowance, tokenizer, summed);
            while !now.cuts.is_empty() {
                let Some((group, k)) =
                    self.crowding_group(stage, &now.kept, &order, allowance, tokenizer)
                else {
                    break;
                };
                // Keeping k more means cutting, of all but `big`, at most as many as the
                // order's cut less k + 1: there must be that many to save.
                if now.cuts.len() < k + 1 {
                    break;
                }
                // Whatever is cut, the order's cut that follows keeps only entries not set
                // aside, and must keep `target` of them and fit (when this one fits). When
                // even the smallest `target` of them cannot, no cut is tried: with an exact
                // tokenizer and no byte cap the searches below spare nothing, one per group
                // member, and the group can be most of the kept set (tester 15 F3).
                let target = now.kept.len() + k;
                if summed
                    && now.fits
                    && self.none_fit(stage, &all, &out, target, allowance, tokenizer)
                {
                    break;
                }
                // What the order's cut left (kept, less what was put back), and what it cut
                // (put back or not) by line size, smallest first.
                let mut was_put_back = vec![false; self.len()];
                now.put_back.iter().for_each(|&i| was_put_back[i] = true);
                let left_kept: Vec<usize> = now
                    .kept
                    .iter()
                    .copied()
                    .filter(|&i| !was_put_back[i])
                    .collect();
                let mut joinable: Vec<(usize, usize)> = now
                    .cuts
                    .iter()
                    .chain(&now.put_back)
                    .map(|&i| (self.line_bytes(i, stage, true), i))
                    .collect();
                joinable.sort_unstable();
                let mut moved = false;
                for &big in &group {
                    // Its cut must keep `now.kept.len() + k` entries. Without it the order
                    // cuts no more than it did (what it left fits, less `big`), so what that
                    // cut left is kept again, and only entries the order cut can join it,
                    // each adding at least its line. When even the smallest of those cannot
                    // bring the count there within the allowance, the full search is spared.
                    let base: Vec<usize> =
                        left_kept.iter().copied().filter(|&i| i != big).collect();
                    let mut can = base.len();
                    let mut least = self.bytes(stage, &base);
                    for &(line, i) in &joinable {
                        if can >= now.kept.len() + k
                            || Self::surely_over(least + line, allowance, tokenizer)
                        {
                            break;
                        }
                        if i != big {
                            least += line;
                            can += 1;
                        }
                    }
                    if can < now.kept.len() + k {
                        continue;
                    }
                    out[big] = true;
                    let instead = self
                        .cut_and_refill(stage, &all, &order, &out, allowance, tokenizer, summed);
                    if now.crowded_out_by(big, &instead, k, cut_order) {
                        let share_of = |set: &[usize]| {
                            let tokens = self.tokens(stage, set, tokenizer);
                            share(self.bytes(stage, set), Some(tokens), allowance)
                        };
                        let mut together = group.clone();
                        together.sort_unstable();
                        crowds[big] = Some(CrowdsOut {
                            share_percent: share_of(&[big]),
                            would_cut: now.cuts.len(),
                            with_others: group.len() - 1,
                            together_percent: if group.len() > 1 {
                                share_of(&together)
                            } else {
                                0
                            },
                        });
                        cut.push(big);
                        now = instead;
                        moved = true;
                        break;
                    }
                    out[big] = false;
                }
                if !moved {
                    break;
                }
            }
            if out.iter().any(|&o| o) {
                all.retain(|&i| !out[i]);
                order.retain(|&i| !out[i]);
                (stage, dropped, fits) = self.trim_stage(&all, allowance, tokenizer);
            } else {
                settled = Some(now);
            }
        }
        let mut kept = all.clone();
        if !fits {
            let now = match settled {
                Some(now) => now,
                None => self.cut_and_refill(
                    stage,
                    &all,
                    &order,
                    &vec![false; self.len()],
                    allowance,
                    tokenizer,
                    summed,
                ),
            };
            let mut cuts = now.cuts;
            kept = now.kept;
            fits = now.fits;
            if fits {
                // The kept set is chosen fully trimmed, as the cut is judged; it is sent with
                // the fewest trim steps with which it fits (Q8: the 20 small entries left
                // after a big one was cut went with all six steps though they fit
                // untrimmed), and the steps said are those that changed what is sent. Room
                // that frees is offered to the entries still cut, as the refill does.
                (stage, dropped, _) = self.trim_stage(&kept, allowance, tokenizer);
                let back = self.refill(stage, &mut kept, &cuts, allowance, tokenizer, summed);
                cuts.retain(|&i| !back[i]);
            }
            cut.extend_from_slice(&cuts);
        }
        let cut = cut
            .into_iter()
            .map(|i| CutEntry {
                name: self.entry_name(i).to_string(),
                kind: self.entry_kind(i),
                bytes: self.entry_text(i, stage).len(),
                alone_over: alone_over[i],
                crowds_out: crowds[i],
            })
            .collect();
        let text = self.render(stage, &kept);
        let trim = TrimRecord {
            before_bytes,
            after_bytes: text.len(),
            before_tokens,
            after_tokens: self.tokens(stage, &kept, tokenizer),
            exact_tokens: tokenizer != Tokenizer::Estimate,
            steps_applied: dropped.len(),
            dropped,
            kept: kept.len(),
            total: self.len(),
            cut,
            trim_level: stage as u8,
            fits,
            cut_policy: cut_order.policy.clone(),
            planner_removed,
        };
        Compacted { text, trim, kept }
    }
}

/// Whether a text of `bytes` fits the allowance, counting its tokens only when the bytes
/// leave it open: a token is never shorter than a byte.
fn verdict(bytes: usize, allowance: Allowance, tokens: impl FnOnce() -> usize) -> bool {
    if allowance.bytes.is_some_and(|cap| bytes > cap) {
        return false;
    }
    bytes <= allowance.tokens || tokens() <= allowance.tokens
}

/// A kept set's figures at one stage as running sums, so adding an entry is arithmetic:
/// its text's bytes and tokens are the frame's plus each line's, every line with its comma
/// but each section's last ([`PreparedCatalog::tally_bytes`], [`PreparedCatalog::tally_tokens`]).
#[derive(Debug, Clone, Copy)]
struct Tally {
    /// Bytes of the lines, each with its comma.
    bytes: usize,
    /// Tokens of the lines, each with its comma; None until counted.
    tokens: Option<usize>,
    /// The last entry of each section (the highest index).
    last_pack: Option<usize>,
    last_pipe: Option<usize>,
}

/// Entries cut from the front of the cut order, and what is left.
struct OrderCut {
    cuts: Vec<usize>,
    kept: Vec<usize>,
    fits: bool,
    /// Of `kept`, the entries the order cut and [`PreparedCatalog::cut_and_refill`] put back.
    put_back: Vec<usize>,
}

impl OrderCut {
    /// The crowding rule's test for `big`, of the entries that crowd the rest out at `k`
    /// ([`PreparedCatalog::crowding_group`]): cutting it (giving `instead`) keeps at least
    /// `k` more entries and fits as well, and `big` does not rank clearly above the entries
    /// that cut would save.
    fn crowded_out_by(&self, big: usize, instead: &OrderCut, k: usize, order: &CutOrder) -> bool {
        if instead.kept.len() < self.kept.len() + k || (self.fits && !instead.fits) {
            return false;
        }
        let before: std::collections::HashSet<usize> = self.kept.iter().copied().collect();
        let saved: Vec<usize> = instead
            .kept
            .iter()
            .copied()
            .filter(|i| !before.contains(i))
            .collect();
        !order.clearly_above(big, &saved)
    }
}

/// `part` of `whole` in whole percent, rounded down, except that more than half is never
/// said as "50 %" (tester 9 T9-3: 5,108 of 10,000 bytes read 50 %, beside a kept entry of
/// 4,880), and an entry that fits is never said to take 100 %.
fn share_percent(part: usize, whole: usize) -> usize {
    let percent = part * 100 / whole.max(1);
    if part * 2 > whole {
        percent.max(51)
    } else {
        percent
    }
}

/// The share of the allowance a catalog text of `bytes` and `tokens` takes: the larger of
/// its bytes' and its tokens' share, in whole percent (see [`share_percent`]).
fn share(bytes: usize, tokens: Option<usize>, allowance: Allowance) -> usize {
    let by_bytes = allowance.bytes.map_or(0, |cap| share_percent(bytes, cap));
    by_bytes.max(tokens.map_or(0, |t| share_percent(t, allowance.tokens)))
}

/// The smallest `k` for which an entry of `bytes` (when bytes are capped) and `tokens`
/// (when given) takes more than a `k`-th of half the allowance: 1 when it takes more than
/// half, 2 when more than a quarter, … (`usize::MAX` when nothing is measured).
fn crowding_level(bytes: usize, tokens: Option<usize>, allowance: Allowance) -> usize {
    // part * 2k > whole exactly when k > whole / (2 part), that is k >= whole / (2 part) + 1.
    let level = |part: usize, whole: usize| match part {
        0 => usize::MAX,
        p => whole / p.saturating_mul(2) + 1,
    };
    let by_bytes = allowance.bytes.map_or(usize::MAX, |cap| level(bytes, cap));
    by_bytes.min(tokens.map_or(usize::MAX, |t| level(t, allowance.tokens)))
}

/// The crowding rule's `k` from the kept entries' levels ([`crowding_level`]): the smallest
/// `k` that at least `k` of them have reached.
fn crowding_k(levels: impl Iterator<Item = usize>) -> Option<usize> {
    let mut levels: Vec<usize> = levels.collect();
    levels.sort_unstable();
    (1..=levels.len()).find(|&k| levels[k - 1] <= k)
}

/// The anchor's method: apply each step to a copy of the whole catalog, re-serialise and
/// re-count the whole text after every step and every cut. Produces the same result as
/// [`PreparedCatalog::compact`]; kept for the benchmark comparison and as a test oracle.
pub fn compact_reserialising(
    guide: &RoutingGuide,
    allowance: Allowance,
    tokenizer: Tokenizer,
    cut_order: &CutOrder,
) -> Compacted {
    let packs = guide.packs.len();
    let render = |g: &RoutingGuide, kept: &[usize]| -> String {
        let p: Vec<String> = kept
            .iter()
            .filter(|&&i| i < packs)
            .map(|&i| to_json(&g.packs[i]))
            .collect();
        let q: Vec<String> = kept
            .iter()
            .filter(|&&i| i >= packs)
            .map(|&i| to_json(&g.pipelines[i - packs]))
            .collect();
        let section = |v: &[String]| {
            if v.is_empty() {
                String::new()
            } else {
                format!("\n{}\n", v.join(",\n"))
            }
        };
        format!(
            "{{\"packs\":[{}],\"pipelines\":[{}]}}",
            section(&p),
            section(&q)
        )
    };
    let count = |text: &str| tokens::count(tokenizer, text).tokens;
    let fits = |text: &str| {
        allowance.bytes.is_none_or(|cap| text.len() <= cap) && count(text) <= allowance.tokens
    };
    let everything: Vec<usize> = (0..guide.entry_count()).collect();
    let text = render(guide, &everything);
    let before_bytes = text.len();
    let before_tokens = count(&text);
    // Entries that alone, with every step applied, do not fit are cut by themselves first.
    let mut trimmed = guide.clone();
    for step in TrimStep::ALL {
        trimmed.packs.iter_mut().for_each(|p| p.apply(step));
        trimmed.pipelines.iter_mut().for_each(|p| p.apply(step));
    }
    let oversized: Vec<usize> = if fits(&text) {
        Vec::new()
    } else {
        cut_order
            .order
            .iter()
            .copied()
            .filter(|&i| !fits(&render(&trimmed, &[i])))
            .collect()
    };
    let all: Vec<usize> = everything
        .into_iter()
        .filter(|i| !oversized.contains(i))
        .collect();
    // Apply the steps in order to a fresh copy while `all` is over the allowance.
    let trim_all = |all: &[usize]| -> (RoutingGuide, String, usize, Vec<Dropped>) {
        let mut g = guide.clone();
        let mut text = render(&g, all);
        let mut stage = 0;
        let mut dropped = Vec::new();
        while !fits(&text) && stage < LAST_STAGE {
            let step = TrimStep::ALL[stage];
            g.packs.iter_mut().for_each(|p| p.apply(step));
            g.pipelines.iter_mut().for_each(|p| p.apply(step));
            let next = render(&g, all);
            if next.len() < text.len() {
                dropped.push(Dropped {
                    step,
                    saved_bytes: text.len() - next.len(),
                });
            }
            text = next;
            stage += 1;
        }
        (g, text, stage, dropped)
    };
    let rest: Vec<usize> = cut_order
        .order
        .iter()
        .copied()
        .filter(|i| !oversized.contains(i))
        .collect();
    // Put back each entry cut, the last cut first, that fits beside what is kept as `g` has
    // it.
    let refill =
        |g: &RoutingGuide, mut cuts: Vec<usize>, mut kept: Vec<usize>, mut text: String| {
            for &i in cuts.clone().iter().rev() {
                let mut with: Vec<usize> = kept.clone();
                with.push(i);
                with.sort_unstable();
                let with_text = render(g, &with);
                if fits(&with_text) {
                    (kept, text) = (with, with_text);
                    cuts.retain(|&j| j != i);
                }
            }
            (cuts, kept, text)
        };
    // Cut `rest` (less `out`) from its front, one entry at a time, until `all` (less `out`)
    // fits as `g` has it; then put back each entry cut, the last cut first, that fits beside
    // what is kept.
    let cut_linear = |g: &RoutingGuide, out: &[usize]| -> (Vec<usize>, Vec<usize>, String) {
        let mut kept: Vec<usize> = all.iter().copied().filter(|i| !out.contains(i)).collect();
        let mut text = render(g, &kept);
        let mut cuts = Vec::new();
        for &i in rest.iter().filter(|i| !out.contains(i)) {
            if fits(&text) {
                break;
            }
            kept.retain(|&j| j != i);
            cuts.push(i);
            text = render(g, &kept);
        }
        if fits(&text) {
            (cuts, kept, text) = refill(g, cuts, kept, text);
        }
        (cuts, kept, text)
    };
    let (mut g, mut text, mut stage, mut dropped) = trim_all(&all);
    // The crowding rule, fully trimmed: for the smallest k, the k or more kept entries each
    // over a k-th of half the allowance; the largest of them whose cut keeps at least k more
    // entries (and that does not rank clearly above those it saves) is cut; then look again.
    let group_of = |g: &RoutingGuide, kept_now: &[usize]| -> Option<(Vec<usize>, usize)> {
        let level = |i: usize| {
            let alone = render(g, &[i]);
            crowding_level(alone.len(), Some(count(&alone)), allowance)
        };
        let k = crowding_k(kept_now.iter().map(|&i| level(i)))?;
        let position = |i: usize| rest.iter().position(|&j| j == i).unwrap_or(usize::MAX);
        let mut group: Vec<usize> = kept_now
            .iter()
            .copied()
            .filter(|&i| level(i) <= k)
            .collect();
        group.sort_by_key(|&i| (std::cmp::Reverse(render(g, &[i]).len()), position(i)));
        Some((group, k))
    };
    let mut crowded: Vec<(usize, CrowdsOut)> = Vec::new();
    if !fits(&text) {
        let mut out: Vec<usize> = Vec::new();
        let (mut cuts, mut kept_now, mut text_now) = cut_linear(&g, &out);
        'look: while let Some((group, k)) = group_of(&g, &kept_now) {
            for &big in &group {
                let mut out2 = out.clone();
                out2.push(big);
                let (cuts2, kept2, text2) = cut_linear(&g, &out2);
                let saved: Vec<usize> = kept2
                    .iter()
                    .copied()
                    .filter(|i| !kept_now.contains(i))
                    .collect();
                if kept2.len() < kept_now.len() + k
                    || (fits(&text_now) && !fits(&text2))
                    || cut_order.clearly_above(big, &saved)
                {
                    continue;
                }
                let share_of = |set: &[usize]| {
                    let text = render(&g, set);
                    share(text.len(), Some(count(&text)), allowance)
                };
                let mut together = group.clone();
                together.sort_unstable();
                let crowds = CrowdsOut {
                    share_percent: share_of(&[big]),
                    would_cut: cuts.len(),
                    with_others: group.len() - 1,
                    together_percent: if group.len() > 1 {
                        share_of(&together)
                    } else {
                        0
                    },
                };
                crowded.push((big, crowds));
                (out, cuts, kept_now, text_now) = (out2, cuts2, kept2, text2);
                continue 'look;
            }
            break;
        }
        if !out.is_empty() {
            let rest_of: Vec<usize> = all.iter().copied().filter(|i| !out.contains(i)).collect();
            (g, text, stage, dropped) = trim_all(&rest_of);
        }
    }
    let out: Vec<usize> = crowded.iter().map(|&(i, _)| i).collect();
    let mut cut = Vec::new();
    let entry =
        |g: &RoutingGuide, i: usize, alone_over: bool, crowds_out: Option<CrowdsOut>| CutEntry {
            name: if i < packs {
                g.packs[i].name.clone()
            } else {
                g.pipelines[i - packs].id.clone()
            },
            kind: if i < packs {
                EntryKind::Pack
            } else {
                EntryKind::Pipeline
            },
            bytes: if i < packs {
                to_json(&g.packs[i]).len()
            } else {
                to_json(&g.pipelines[i - packs]).len()
            },
            alone_over,
            crowds_out,
        };
    let mut kept: Vec<usize> = all.iter().copied().filter(|i| !out.contains(i)).collect();
    let mut cuts = Vec::new();
    if !fits(&text) {
        (cuts, kept, text) = cut_linear(&g, &out);
        if fits(&text) {
            // Sent with the fewest steps with which the kept set fits, then the refill again.
            (g, text, stage, dropped) = trim_all(&kept);
            (cuts, kept, text) = refill(&g, cuts, kept, text);
        }
    }
    cut.extend(oversized.iter().map(|&i| entry(&g, i, true, None)));
    cut.extend(crowded.iter().map(|&(i, c)| entry(&g, i, false, Some(c))));
    cut.extend(cuts.iter().map(|&i| entry(&g, i, false, None)));
    let trim = TrimRecord {
        before_bytes,
        after_bytes: text.len(),
        before_tokens,
        after_tokens: count(&text),
        exact_tokens: tokenizer != Tokenizer::Estimate,
        steps_applied: dropped.len(),
        dropped,
        kept: kept.len(),
        total: guide.entry_count(),
        cut,
        trim_level: stage as u8,
        fits: fits(&text),
        cut_policy: cut_order.policy.clone(),
        planner_removed: 0,
    };
    Compacted { text, trim, kept }
}

#[cfg(test)]
mod tests {

    /// Tester 10 T10-8: "the full catalog fits" was said when the planner had removed 59
    /// of 72 entries and the full catalog was over the cap.
    #[test]
    fn untouched_says_what_fit() {
        let mut t = TrimRecord {
            before_bytes: 39_769,
            after_bytes: 7_581,
            before_tokens: 13_257,
            after_tokens: 2_527,
            exact_tokens: false,
            dropped: Vec::new(),
            kept: 13,
            total: 72,
            cut: Vec::new(),
            steps_applied: 0,
            trim_level: 0,
            fits: true,
            cut_policy: String::new(),
            planner_removed: 59,
        };
        assert_eq!(
            t.untouched_note().unwrap(),
            "untouched: the planner's 13/72 fit"
        );
        t.planner_removed = 0;
        t.kept = 72;
        assert_eq!(
            t.untouched_note().unwrap(),
            "untouched: the full catalog fits"
        );
    }
    use super::*;
    use serde_json::json;

    fn guide() -> RoutingGuide {
        serde_json::from_value(json!({
            "packs": [
                {"name": "web.fetch", "description": "Fetch a URL. Returns the body as text.",
                 "metadata": {"accepts": ["url"], "produces": ["html"], "intent_keywords": ["fetch", "download", "get page"],
                    "typical_use": "Grab a page before parsing it.", "limitations": ["no JavaScript"],
                    "input_schema": {"type": "object", "properties": {"url": {"type": "string", "description": "the address"}}}}},
                {"name": "blog.draft", "description": "Draft a blog post from a brief. Keeps the house style.",
                 "metadata": {"intent_keywords": ["blog"], "typical_use": "Posts from notes.", "limitations": ["English"]}},
                {"name": "image.generate", "description": "Generate an image from a prompt. PNG out.",
                 "metadata": {"intent_keywords": ["image", "illustration"], "typical_use": "Hero images."}}
            ],
            "pipelines": [
                {"id": "builtin.brief-to-blog", "name": "Brief to blog", "description": "Research, draft and illustrate. Three steps.",
                 "metadata": {"supersedes": ["blog.draft"], "intent_keywords": ["blog from brief"], "typical_use": "Launch posts.",
                    "steps": [{"id": "s1", "name": "Draft", "pack": "blog.draft", "body": {"tone": "friendly", "length": 800}},
                              {"id": "s2", "name": "Art", "pack": "image.generate", "body": {"size": "1024x1024"}}]}},
                {"id": "builtin.page-digest", "name": "Page digest", "description": "Fetch and summarise a page. Short.",
                 "metadata": {"intent_keywords": ["digest"], "steps": [{"id": "s1", "name": "Fetch", "pack": "web.fetch", "body": {"x": 1}}]}}
            ]
        }))
        .unwrap()
    }

    fn unlimited() -> Allowance {
        Allowance {
            tokens: usize::MAX,
            bytes: None,
        }
    }

    #[test]
    fn rendered_text_is_valid_json_of_the_catalog() {
        let p = PreparedCatalog::new(guide());
        let text = p.render_full();
        let back: RoutingGuide = serde_json::from_str(&text).unwrap();
        assert_eq!(back, guide());
        assert_eq!(p.bytes(0, &[0, 1, 2, 3, 4]), text.len());
        for kept in [vec![], vec![0], vec![3], vec![0, 4], vec![1, 2]] {
            let t = p.render(3, &kept);
            assert_eq!(t.len(), p.bytes(3, &kept), "{t}");
            serde_json::from_str::<RoutingGuide>(&t).unwrap();
        }
    }

    #[test]
    fn summed_token_counts_equal_counting_the_whole_text() {
        let p = PreparedCatalog::new(guide());
        for tok in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Estimate] {
            for stage in 0..STAGES {
                for kept in [vec![0, 1, 2, 3, 4], vec![2, 3], vec![4], vec![0], vec![]] {
                    let text = p.render(stage, &kept);
                    assert_eq!(
                        p.tokens(stage, &kept, tok),
                        tokens::count(tok, &text).tokens,
                        "{tok:?} stage {stage} {kept:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn fitting_catalog_passes_untouched() {
        let p = PreparedCatalog::new(guide());
        let c = p.compact(
            unlimited(),
            Tokenizer::O200k,
            &CutOrder::from_end(p.guide()),
        );
        assert_eq!(c.text, p.render_full());
        assert_eq!(c.trim.before_bytes, c.trim.after_bytes);
        assert!(c.trim.dropped.is_empty() && c.trim.cut.is_empty());
        assert_eq!(c.trim.trim_level, 0);
        assert!(c.trim.fits && c.trim.exact_tokens);
    }

    #[test]
    fn steps_apply_in_order_only_while_over_budget() {
        let p = PreparedCatalog::new(guide());
        let full = p.render_full().len();
        // Just under full: step 1 alone is enough.
        let c = p.compact(
            Allowance {
                tokens: usize::MAX,
                bytes: Some(full - 1),
            },
            Tokenizer::Estimate,
            &CutOrder::from_end(p.guide()),
        );
        assert_eq!(c.trim.dropped.len(), 1);
        assert_eq!(c.trim.dropped[0].step, TrimStep::IntentKeywords);
        assert_eq!(c.trim.trim_level, 1);
        assert_eq!(
            c.trim.before_bytes - c.trim.after_bytes,
            c.trim.dropped[0].saved_bytes
        );
        assert!(!c.text.contains("intent_keywords"));
        assert!(c.text.contains("typical_use"));
    }

    #[test]
    fn only_steps_that_changed_something_are_recorded() {
        let mut g = guide();
        // No limitations anywhere: step 3 changes nothing and must not appear.
        g.packs
            .iter_mut()
            .for_each(|p| p.metadata.limitations.clear());
        g.pipelines
            .iter_mut()
            .for_each(|p| p.metadata.limitations.clear());
        let p = PreparedCatalog::new(g);
        let c = p.compact(
            Allowance {
                tokens: usize::MAX,
                bytes: Some(700),
            },
            Tokenizer::Estimate,
            &CutOrder::from_end(p.guide()),
        );
        let steps: Vec<TrimStep> = c.trim.dropped.iter().map(|d| d.step).collect();
        assert!(!steps.contains(&TrimStep::Limitations), "{steps:?}");
        assert!(c.trim.dropped.iter().all(|d| d.saved_bytes > 0));
        // Tester 32 F3: `steps_applied` counts the steps that changed something, as the
        // screens say it; the level reached is `trim_level`, past the step that saved nothing.
        assert_eq!(c.trim.steps_applied, steps.len());
        assert!(
            usize::from(c.trim.trim_level) > TrimStep::Limitations as usize,
            "{:?}",
            c.trim
        );
        assert!(c.trim.steps_applied < usize::from(c.trim.trim_level));
        let saved: usize = c.trim.dropped.iter().map(|d| d.saved_bytes).sum();
        if c.trim.cut.is_empty() {
            assert_eq!(saved, c.trim.before_bytes - c.trim.after_bytes);
        }
    }

    #[test]
    fn cut_keeps_superseding_pipelines_and_fits() {
        let p = PreparedCatalog::new(guide());
        let c = p.compact(
            Allowance {
                tokens: usize::MAX,
                bytes: Some(330),
            },
            Tokenizer::Estimate,
            &CutOrder::from_end(p.guide()),
        );
        assert!(c.trim.fits, "{:?}", c.trim);
        assert!(c.text.len() <= 330);
        assert!(!c.trim.cut.is_empty());
        assert!(
            c.text.contains("\"supersedes\":[\"blog.draft\"]"),
            "{}",
            c.text
        );
        assert_eq!(c.trim.cut[0].name, "builtin.page-digest");
        assert_eq!(c.trim.kept + c.trim.cut.len(), c.trim.total);
    }

    #[test]
    fn cut_follows_a_supplied_ranking() {
        let p = PreparedCatalog::new(guide());
        // Best first: image.generate, then web.fetch. Everything else goes first.
        let order = CutOrder::from_ranking(&[2, 0], p.len(), "ranked");
        assert_eq!(order.order.len(), 5);
        assert_eq!(&order.order[3..], &[0, 2]);
        let c = p.compact(
            Allowance {
                tokens: usize::MAX,
                bytes: Some(150),
            },
            Tokenizer::Estimate,
            &order,
        );
        assert!(c.trim.fits);
        assert!(c.text.contains("image.generate"), "{}", c.text);
    }

    /// Tester 6 F3: a head entry that can never fit emptied the catalog with no intent, and
    /// the best-ranked one did with one: cutting from the order's front until the rest fit
    /// took every entry cut before it.
    #[test]
    fn an_entry_alone_over_the_allowance_is_cut_by_itself() {
        let mut g = guide();
        g.packs[0].description = "A".repeat(20_000);
        let p = PreparedCatalog::new(g.clone());
        let allowance = Allowance {
            tokens: 2_000,
            bytes: Some(3_000),
        };
        for order in [
            CutOrder::from_ranking(&[4, 3, 2, 1], p.len(), "ranked"),
            CutOrder::from_end(p.guide()),
            CutOrder::from_ranking(&[0, 1, 2, 3, 4], p.len(), "ranked, the big one best"),
        ] {
            for tok in [Tokenizer::O200k, Tokenizer::Estimate] {
                let c = p.compact(allowance, tok, &order);
                assert!(c.trim.fits, "{:?}", c.trim);
                assert_eq!(c.kept, vec![1, 2, 3, 4], "{}", order.policy);
                assert_eq!(c.trim.cut.len(), 1);
                assert_eq!(c.trim.cut[0].name, "web.fetch");
                assert!(c.trim.cut[0].alone_over);
                assert_eq!(c.trim.trim_level, 0, "the rest fits untouched");
                assert!(
                    c.trim
                        .cut_note()
                        .ends_with("1 entry alone over the allowance cut first")
                );
                let anchor = compact_reserialising(&g, allowance, tok, &order);
                assert_eq!(c.text, anchor.text);
                assert_eq!(c.trim, anchor.trim);
            }
        }
        // Over the allowance only with the others: cut in order as before, not "alone".
        let tight = PreparedCatalog::new(guide()).compact(
            Allowance {
                tokens: usize::MAX,
                bytes: Some(330),
            },
            Tokenizer::Estimate,
            &CutOrder::from_end(&guide()),
        );
        assert!(!tight.trim.cut.is_empty());
        assert!(tight.trim.cut.iter().all(|c| !c.alone_over));
    }

    /// A big pack at the head, then `smalls` small ones: the tester's shape (T7-3).
    fn head_big(big_bytes: usize, smalls: usize) -> RoutingGuide {
        let mut packs = vec![json!({"name": "big", "description": "A".repeat(big_bytes)})];
        packs.extend(
            (0..smalls)
                .map(|i| json!({"name": format!("small{i}"), "description": "Search notes."})),
        );
        serde_json::from_value(json!({ "packs": packs })).unwrap()
    }

    fn by_bytes(cap: usize) -> Allowance {
        Allowance {
            tokens: usize::MAX,
            bytes: Some(cap),
        }
    }

    /// Tester 7 T7-3: an entry just under the allowance, kept first, took every entry
    /// behind it. Over half the allowance (fully trimmed) and costing more entries than it
    /// is, it is cut instead, said with its figures; at exactly half it is not big, and the
    /// cut order stands.
    #[test]
    fn an_entry_over_half_the_allowance_is_cut_when_keeping_it_cuts_more() {
        let g = head_big(600, 14);
        let p = PreparedCatalog::new(g.clone());
        let big = p.bytes(LAST_STAGE, &[0]);
        let smalls: Vec<usize> = (1..15).collect();
        let all: Vec<usize> = (0..15).collect();
        // The shape: the smalls alone fit either cap, all together fit neither.
        assert!(p.bytes(LAST_STAGE, &smalls) < 2 * big - 1);
        assert!(p.bytes(LAST_STAGE, &all) > 2 * big);
        let order = CutOrder::from_end(p.guide());
        for tok in [Tokenizer::Estimate, Tokenizer::O200k] {
            let c = p.compact(by_bytes(2 * big - 1), tok, &order);
            assert!(c.trim.fits);
            assert_eq!(c.kept, smalls, "{:?}", c.trim);
            assert_eq!(c.trim.cut.len(), 1);
            let crowds = c.trim.cut[0].crowds_out.expect("crowds_out");
            assert_eq!(c.trim.cut[0].name, "big");
            assert_eq!(crowds.share_percent, 51, "just over half, rounded up");
            assert!(crowds.would_cut >= 2, "{crowds:?}");
            assert_eq!(c.trim.trim_level, 0, "the rest is trimmed only as it needs");
            assert!(c.trim.cut_note().ends_with(&format!(
                "1 entry cut as it takes 51 % of the allowance fully trimmed; keeping it would cut {}",
                crowds.would_cut
            )));
            assert_eq!(
                c.trim.cut[0].reason().unwrap(),
                format!(
                    "takes 51 % of the allowance fully trimmed; keeping it would cut {}",
                    crowds.would_cut
                )
            );
            let anchor = compact_reserialising(&g, by_bytes(2 * big - 1), tok, &order);
            assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));

            // Exactly half: not big. Cut from the end as before, the head entry kept.
            let c = p.compact(by_bytes(2 * big), tok, &order);
            assert!(c.trim.fits && c.kept.contains(&0), "{:?}", c.trim);
            assert!(c.trim.cut.len() >= 2);
            assert!(c.trim.cut.iter().all(|e| e.crowds_out.is_none()));
            let anchor = compact_reserialising(&g, by_bytes(2 * big), tok, &order);
            assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
        }
        // Keeping it would cut only one entry: the same count either way, it stays.
        let g = head_big(600, 3);
        let p = PreparedCatalog::new(g.clone());
        let big = p.bytes(LAST_STAGE, &[0]);
        let cap = p.bytes(LAST_STAGE, &[0, 1, 2]);
        assert!(big * 2 > cap);
        let c = p.compact(by_bytes(cap), Tokenizer::Estimate, &order);
        assert_eq!(c.kept, vec![0, 1, 2]);
        assert!(c.trim.cut.iter().all(|e| e.crowds_out.is_none()));
    }

    /// With a prompt, the big entry is cut only when it does not rank clearly above every
    /// entry its cut would save: twice the best of their scores, or a request's best entry
    /// none of them is nor ties, keeps it.
    #[test]
    fn the_crowding_rule_never_cuts_an_entry_ranked_clearly_above_those_it_saves() {
        let g = head_big(600, 14);
        let p = PreparedCatalog::new(g.clone());
        let cap = 2 * p.bytes(LAST_STAGE, &[0]) - 1;
        // Ranked best first: the big one, then the smalls in catalog order.
        let ranked: Vec<usize> = (0..15).collect();
        let with = |big: Relevance, small: f64| {
            let mut r = vec![
                Relevance {
                    score: small,
                    first: false,
                    request: None,
                };
                15
            ];
            r[0] = big;
            CutOrder::from_ranking(&ranked, p.len(), "ranked").with_relevance(r)
        };
        let score = |s: f64| Relevance {
            score: s,
            first: false,
            request: None,
        };
        for (order, crowded) in [
            (with(score(2.0), 1.0), false),
            (with(score(1.99), 1.0), true),
            (with(score(1.0), 1.0), true),
            (with(score(5.0), 0.0), false),
            (
                with(
                    Relevance {
                        score: 1.5,
                        first: true,
                        request: None,
                    },
                    1.0,
                ),
                false,
            ),
            // A request's best entry by a tie (tester 10 T10-6: the big entry listed first
            // won the tie and was spared) is not clearly above the entries it ties with.
            (
                with(
                    Relevance {
                        score: 1.0,
                        first: true,
                        request: None,
                    },
                    1.0,
                ),
                true,
            ),
            (CutOrder::from_ranking(&ranked, p.len(), "ranked"), true),
        ] {
            for tok in [Tokenizer::Estimate, Tokenizer::O200k] {
                let c = p.compact(by_bytes(cap), tok, &order);
                assert!(c.trim.fits);
                assert_eq!(
                    !c.kept.contains(&0),
                    crowded,
                    "{:?}",
                    order.relevance.first()
                );
                assert_eq!(c.trim.cut.iter().any(|e| e.crowds_out.is_some()), crowded);
                let anchor = compact_reserialising(&g, by_bytes(cap), tok, &order);
                assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
            }
        }
        // Without a prompt a superseding pipeline is kept first: not cut to save packs.
        let mut g = head_big(0, 14);
        g.packs.remove(0);
        g.pipelines = vec![
            serde_json::from_value(json!({"id": "big", "description": "A".repeat(600),
                "metadata": {"supersedes": ["small0"]}}))
            .unwrap(),
        ];
        let p = PreparedCatalog::new(g.clone());
        let cap = 2 * p.bytes(LAST_STAGE, &[14]) - 1;
        let order = CutOrder::from_end(p.guide());
        let c = p.compact(by_bytes(cap), Tokenizer::Estimate, &order);
        assert!(c.trim.fits && c.kept.contains(&14), "{:?}", c.trim);
        assert!(c.trim.cut.iter().all(|e| e.crowds_out.is_none()));
        let anchor = compact_reserialising(&g, by_bytes(cap), Tokenizer::Estimate, &order);
        assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
    }

    /// `bigs` big packs at the head (each `big_bytes` of description), then `smalls` small
    /// ones: tester 9's shapes (T9-2).
    fn head_bigs(bigs: usize, big_bytes: usize, smalls: usize) -> RoutingGuide {
        let mut packs: Vec<serde_json::Value> = (0..bigs)
            .map(|i| json!({"name": format!("big{i}"), "description": "A".repeat(big_bytes)}))
            .collect();
        packs.extend(
            (0..smalls)
                .map(|i| json!({"name": format!("small{i}"), "description": "Search notes."})),
        );
        serde_json::from_value(json!({ "packs": packs })).unwrap()
    }

    /// Tester 9 T9-2: two entries of 49 % each (or three of 33 %), none over half, kept 4 of
    /// 22 (4 of 33). Together they take more than half the allowance: the largest of them is
    /// cut when that keeps at least as many more entries as they are, said with its own
    /// share and theirs together, and the oracle agrees.
    #[test]
    fn a_few_entries_that_together_crowd_the_rest_out_lose_the_largest() {
        for (bigs, big_bytes, smalls) in [(2, 1_500, 20), (3, 2_000, 30)] {
            let g = head_bigs(bigs, big_bytes, smalls);
            let p = PreparedCatalog::new(g.clone());
            let n = bigs + smalls;
            // The allowance holds the bigs and one or two smalls, as the tester's did.
            let cap = p.bytes(LAST_STAGE, &(0..bigs + 2).collect::<Vec<_>>());
            let big = p.bytes(LAST_STAGE, &[0]);
            assert!(big * 2 < cap, "no single entry over half");
            let order = CutOrder::from_end(p.guide());
            for tok in [Tokenizer::Estimate, Tokenizer::O200k] {
                let c = p.compact(by_bytes(cap), tok, &order);
                assert!(c.trim.fits, "{:?}", c.trim);
                let crowded: Vec<&CutEntry> = c
                    .trim
                    .cut
                    .iter()
                    .filter(|e| e.crowds_out.is_some())
                    .collect();
                assert_eq!(crowded.len(), 1, "{bigs} bigs: {:?}", c.trim);
                // The order cuts from the end: of equal bigs the last goes.
                assert_eq!(crowded[0].name, format!("big{}", bigs - 1));
                let crowds = crowded[0].crowds_out.unwrap();
                // Each takes more than a quarter: the others are named with it, and the cut
                // had to keep at least two more.
                assert_eq!(crowds.with_others, bigs - 1);
                assert!(crowds.share_percent < 50, "{crowds:?}");
                assert!(crowds.together_percent > 50, "{crowds:?}");
                assert_eq!(crowds.would_cut, smalls + bigs - (bigs + 2));
                assert_eq!(c.trim.kept, n - 1, "every small kept: {:?}", c.trim);
                let others = match bigs {
                    2 => "1 other".to_string(),
                    n => format!("{} others", n - 1),
                };
                assert!(c.trim.cut_note().ends_with(&format!(
                    "1 entry cut as it takes {} % of the allowance fully trimmed (with {others}, {} %); \
                     keeping it would cut {}",
                    crowds.share_percent, crowds.together_percent, crowds.would_cut
                )));
                let anchor = compact_reserialising(&g, by_bytes(cap), tok, &order);
                assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
            }
        }
    }

    /// The group rule's bar: cutting one of `k` entries each over a `k`-th of half the
    /// allowance must keep at least `k` more. Two bigs whose cut would keep only one more stay, as the
    /// order has it; bigs a prompt ranks clearly above the smalls stay too.
    #[test]
    fn the_group_rule_needs_as_many_more_entries_as_the_group_has_and_respects_rank() {
        // Each big holds two smalls' room: cutting one would keep one more, not two.
        let g = head_bigs(2, 120, 6);
        let p = PreparedCatalog::new(g.clone());
        let cap = p.bytes(LAST_STAGE, &[0, 1, 2, 3]);
        assert!(p.bytes(LAST_STAGE, &[0]) * 4 > cap && p.bytes(LAST_STAGE, &[2]) * 4 < cap);
        assert!(p.bytes(LAST_STAGE, &[0, 2, 3, 4, 5]) <= cap);
        assert!(p.bytes(LAST_STAGE, &[0, 2, 3, 4, 5, 6]) > cap);
        let order = CutOrder::from_end(p.guide());
        let c = p.compact(by_bytes(cap), Tokenizer::Estimate, &order);
        assert!(
            c.trim.fits && c.kept.contains(&0) && c.kept.contains(&1),
            "{:?}",
            c.trim
        );
        assert!(
            c.trim.cut.iter().all(|e| e.crowds_out.is_none()),
            "{:?}",
            c.trim
        );
        let anchor = compact_reserialising(&g, by_bytes(cap), Tokenizer::Estimate, &order);
        assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));

        // Two 49 % bigs scoring twice the best small: the cut order stands.
        let g = head_bigs(2, 1_500, 20);
        let p = PreparedCatalog::new(g.clone());
        let cap = p.bytes(LAST_STAGE, &[0, 1, 2, 3]);
        let ranked: Vec<usize> = (0..22).collect();
        for (big_score, crowded) in [(2.0, false), (1.5, true)] {
            let mut r = vec![
                Relevance {
                    score: 1.0,
                    first: false,
                    request: None,
                };
                22
            ];
            r[0].score = big_score;
            r[1].score = big_score;
            let order = CutOrder::from_ranking(&ranked, p.len(), "ranked").with_relevance(r);
            let c = p.compact(by_bytes(cap), Tokenizer::Estimate, &order);
            assert_eq!(
                c.trim.cut.iter().any(|e| e.crowds_out.is_some()),
                crowded,
                "{big_score}: {:?}",
                c.trim
            );
            let anchor = compact_reserialising(&g, by_bytes(cap), Tokenizer::Estimate, &order);
            assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
        }
    }

    /// Task Q4: 20 small entries, then one of 9,880 bytes ranked among them (10 smalls above
    /// it, 10 below). The cut by rank took the 10 below it, then the big one, and kept 10 of
    /// 21, though after the big one went all 20 smalls fit: every entry cut only for room
    /// that fits once a later cut made room is put back, best rank first, and the big one is
    /// the only entry said to be cut (for room, not by a rule).
    #[test]
    fn entries_cut_for_room_are_put_back_when_a_later_cut_makes_room() {
        let mut packs: Vec<serde_json::Value> = (0..20)
            .map(|i| json!({"name": format!("small{i}"), "description": format!("Search notes number {i}.")}))
            .collect();
        packs.push(
            json!({"name": "big", "description": format!("search notes {}", "A".repeat(9_880))}),
        );
        let g: RoutingGuide = serde_json::from_value(json!({ "packs": packs })).unwrap();
        let p = PreparedCatalog::new(g.clone());
        let smalls: Vec<usize> = (0..20).collect();
        let allowance = by_bytes(10_000);
        // The shape: the smalls alone fit, the big one with even one small does not.
        assert!(p.fits(LAST_STAGE, &smalls, allowance, Tokenizer::Estimate));
        assert!(!p.fits(LAST_STAGE, &[0, 20], allowance, Tokenizer::Estimate));
        let mut ranked: Vec<usize> = (0..10).collect();
        ranked.push(20);
        ranked.extend(10..20);
        let order = CutOrder::from_ranking(&ranked, p.len(), "ranked");
        for tok in [Tokenizer::Estimate, Tokenizer::O200k] {
            let c = p.compact(allowance, tok, &order);
            assert!(c.trim.fits, "{:?}", c.trim);
            assert_eq!(c.kept, smalls, "{:?}", c.trim);
            assert_eq!(c.trim.kept, 20);
            let cut: Vec<&str> = c.trim.cut.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(cut, ["big"]);
            assert_eq!(c.trim.cut[0].reason(), None, "cut for room, by rank");
            // Q8: the smalls fit untrimmed, so they go untrimmed and no step is said (they
            // went with all six steps).
            assert!(p.fits(0, &smalls, allowance, tok));
            assert_eq!(c.trim.trim_level, 0, "{:?}", c.trim);
            assert_eq!(c.trim.dropped, [], "{:?}", c.trim);
            assert_eq!(c.text, p.render(0, &smalls));
            assert!(c.text.len() <= 10_000);
            let anchor = compact_reserialising(&g, allowance, tok, &order);
            assert_eq!((&c.text, &c.trim), (&anchor.text, &anchor.trim));
        }
    }

    /// The crowding rule's "keeping it would cut N" counts what compaction really cuts when
    /// it keeps the entry, put-back entries included: with the same catalog and allowance,
    /// an order that ranks it clearly above the rest keeps it and cuts exactly N. Smalls of
    /// two sizes make the put-back matter (a short one cut after a long one fits back).
    #[test]
    fn keeping_it_would_cut_counts_what_the_put_back_keeps() {
        let mut packs = vec![json!({"name": "big", "description": "A".repeat(900)})];
        packs.extend((0..24).map(|i| {
            let text = if i % 2 == 0 {
                "Search notes.".to_string()
            } else {
                format!("Search notes {}.", "B".repeat(60))
            };
            json!({"name": format!("small{i}"), "description": text})
        }));
        let g: RoutingGuide = serde_json::from_value(json!({ "packs": packs })).unwrap();
        let p = PreparedCatalog::new(g.clone());
        let ranked: Vec<usize> = (0..p.len()).collect();
        let order = |big: f64| {
            let mut r = vec![
                Relevance {
                    score: 1.0,
                    first: false,
                    request: None,
                };
                p.len()
            ];
            r[0].score = big;
            CutOrder::from_ranking(&ranked, p.len(), "ranked").with_relevance(r)
        };
        let big = p.bytes(LAST_STAGE, &[0]);
        let (mut compared, mut put_back) = (0, 0);
        for cap in (big + 100..2 * big).step_by(37) {
            let crowded = p.compact(by_bytes(cap), Tokenizer::Estimate, &order(1.0));
            let anchor = compact_reserialising(&g, by_bytes(cap), Tokenizer::Estimate, &order(1.0));
            assert_eq!((&crowded.text, &crowded.trim), (&anchor.text, &anchor.trim));
            let Some(c) = crowded.trim.cut.iter().find_map(|e| e.crowds_out) else {
                continue;
            };
            let kept = p.compact(by_bytes(cap), Tokenizer::Estimate, &order(5.0));
            let anchor = compact_reserialising(&g, by_bytes(cap), Tokenizer::Estimate, &order(5.0));
            assert_eq!((&kept.text, &kept.trim), (&anchor.text, &anchor.trim));
            assert!(kept.kept.contains(&0) && kept.trim.fits, "{:?}", kept.trim);
            assert_eq!(
                c.would_cut,
                kept.trim.cut.len(),
                "cap {cap}: {:?}",
                kept.trim
            );
            compared += 1;
            // Cut from the end: a kept small after a cut one was put back.
            let last_kept = kept.kept.last().copied().unwrap_or(0);
            if (1..last_kept).any(|i| !kept.kept.contains(&i)) {
                put_back += 1;
            }
        }
        assert!(
            compared > 3 && put_back > 0,
            "{compared} compared, {put_back} put back"
        );
    }

    #[test]
    fn nothing_fits_is_said_plainly() {
        let p = PreparedCatalog::new(guide());
        let c = p.compact(
            Allowance {
                tokens: 3,
                bytes: None,
            },
            Tokenizer::Estimate,
            &CutOrder::from_end(p.guide()),
        );
        assert!(!c.trim.fits);
        assert_eq!(c.trim.kept, 0);
        assert_eq!(c.text, EMPTY);
    }

    #[test]
    fn token_allowance_binds_as_well_as_bytes() {
        let p = PreparedCatalog::new(guide());
        let full_tokens = p.tokens(0, &[0, 1, 2, 3, 4], Tokenizer::O200k);
        let c = p.compact(
            Allowance {
                tokens: full_tokens - 1,
                bytes: None,
            },
            Tokenizer::O200k,
            &CutOrder::from_end(p.guide()),
        );
        assert!(c.trim.after_tokens < full_tokens);
        assert_eq!(
            c.trim.after_tokens,
            tokens::count(Tokenizer::O200k, &c.text).tokens
        );
    }

    /// Q8: after a cut, the kept set goes with the fewest trim steps with which it fits:
    /// not with one step fewer, and the steps said are those that changed what is sent.
    #[test]
    fn after_a_cut_the_kept_entries_go_with_the_fewest_trim_steps() {
        let p = PreparedCatalog::new(guide());
        let order = CutOrder::from_end(p.guide());
        let mut fewer = 0;
        for cap in (20..2_000).step_by(7) {
            for tok in [Tokenizer::O200k, Tokenizer::Estimate] {
                let allowance = Allowance {
                    tokens: cap / 2,
                    bytes: Some(cap),
                };
                let c = p.compact(allowance, tok, &order);
                if c.trim.cut.is_empty() || !c.trim.fits {
                    continue;
                }
                let stage = usize::from(c.trim.trim_level);
                assert!(p.fits(stage, &c.kept, allowance, tok), "cap {cap}");
                assert!(
                    stage == 0 || !p.fits(stage - 1, &c.kept, allowance, tok),
                    "cap {cap} {tok:?}: fits with {} steps, sent with {stage}",
                    stage - 1
                );
                for d in &c.trim.dropped {
                    let n = usize::from(d.step.number());
                    assert!(n <= stage, "cap {cap}: {d:?} said, {stage} applied");
                    assert_ne!(p.render(n - 1, &c.kept), p.render(n, &c.kept), "cap {cap}");
                }
                fewer += usize::from(stage < LAST_STAGE);
                let anchor = compact_reserialising(p.guide(), allowance, tok, &order);
                assert_eq!(
                    (&c.text, &c.trim),
                    (&anchor.text, &anchor.trim),
                    "cap {cap}"
                );
            }
        }
        assert!(fewer > 0, "no cut went with fewer than every step");
    }

    #[test]
    fn deterministic_and_equal_to_the_reserialising_method() {
        let p = PreparedCatalog::new(guide());
        for cap in [2000, 900, 600, 400, 250, 120, 20] {
            for tok in [Tokenizer::O200k, Tokenizer::Estimate] {
                let allowance = Allowance {
                    tokens: cap / 2,
                    bytes: Some(cap),
                };
                let order = CutOrder::from_end(p.guide());
                let a = p.compact(allowance, tok, &order);
                let b = p.compact(allowance, tok, &order);
                let fresh = PreparedCatalog::new(guide()).compact(allowance, tok, &order);
                let anchor = compact_reserialising(p.guide(), allowance, tok, &order);
                assert_eq!(a, b);
                assert_eq!(a, fresh);
                assert_eq!(a.text, anchor.text, "cap {cap}");
                assert_eq!(a.trim, anchor.trim, "cap {cap}");
            }
        }
    }

    /// Tester 15 F3's shapes at random: many entries of a like size with a few big ones,
    /// packs and pipelines, under a token allowance alone (where nothing spared the
    /// searches) or with a byte cap, cut from the end or by a shuffled ranking, over the
    /// whole catalog or an allowlist, now and then with a cut order that repeats an entry
    /// (measured as before). Running sums and the crowding rule's bound change nothing:
    /// the result equals measuring every set tried, field for field.
    mod sums {
        use super::*;
        use proptest::prelude::*;

        fn catalog(sizes: &[(usize, bool)]) -> RoutingGuide {
            let (mut packs, mut pipelines) = (Vec::new(), Vec::new());
            for (i, &(words, pipe)) in sizes.iter().enumerate() {
                let description = format!("does thing {i} ").repeat(words);
                if pipe {
                    pipelines.push(json!({"id": format!("flow_{i}"), "name": "Flow",
                        "description": description,
                        "metadata": {"intent_keywords": ["flow"], "supersedes": if i % 3 == 0 { vec![format!("tool_{i}")] } else { vec![] },
                            "steps": [{"id": "s1", "name": "Run", "pack": format!("tool_{i}"), "body": {"x": i}}]}}));
                } else {
                    packs.push(json!({"name": format!("tool_{i}"), "description": description,
                        "metadata": {"intent_keywords": ["thing"], "typical_use": "Things.",
                            "input_schema": {"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(words * 3)}}}}}));
                }
            }
            serde_json::from_value(json!({"packs": packs, "pipelines": pipelines})).unwrap()
        }

        fn tokenizer() -> impl Strategy<Value = Tokenizer> {
            prop_oneof![
                Just(Tokenizer::O200k),
                Just(Tokenizer::Cl100k),
                Just(Tokenizer::Estimate)
            ]
        }

        /// The tester's own shape, smaller: like-sized entries, o200k, no byte cap, about
        /// half kept, so the crowding group is most of the kept set.
        #[test]
        fn like_sized_entries_under_o200k_alone() {
            let p = PreparedCatalog::new(catalog(&vec![(20, false); 200]));
            let all: Vec<usize> = (0..p.len()).collect();
            let allowance = Allowance {
                tokens: p.tokens(LAST_STAGE, &all, Tokenizer::O200k) * 57 / 100,
                bytes: None,
            };
            let order = CutOrder::from_end(p.guide());
            let fast = p.compact_among_by(allowance, Tokenizer::O200k, &order, None, true);
            assert!(
                fast.trim.fits && fast.trim.cut.len() > 50,
                "{:?}",
                fast.trim
            );
            let plain = p.compact_among_by(allowance, Tokenizer::O200k, &order, None, false);
            assert_eq!(fast, plain);
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(96))]
            #[test]
            fn running_sums_give_what_measuring_every_set_gives(
                sizes in proptest::collection::vec(
                    (prop_oneof![8 => 4usize..9, 1 => 20usize..120], proptest::bool::weighted(0.2)),
                    1..60,
                ),
                share in 5usize..100,
                capped in any::<bool>(),
                tok in tokenizer(),
                ranked in proptest::option::of(proptest::collection::vec(any::<u32>(), 60)),
                allow in proptest::option::of(proptest::collection::vec(any::<bool>(), 60)),
                repeat in proptest::bool::weighted(0.1),
            ) {
                let p = PreparedCatalog::new(catalog(&sizes));
                let n = p.len();
                let everything: Vec<usize> = (0..n).collect();
                let whole = p.tokens(0, &everything, tok);
                // From a twentieth of the catalog to all of it.
                let allowance = Allowance {
                    tokens: whole * share / 100,
                    bytes: capped.then(|| p.bytes(0, &everything) * share / 150),
                };
                let mut order = match &ranked {
                    None => CutOrder::from_end(p.guide()),
                    Some(keys) => {
                        let mut best: Vec<usize> = everything.clone();
                        best.sort_by_key(|&i| keys[i]);
                        let relevance = (0..n)
                            .map(|i| Relevance { score: f64::from(keys[i] % 7), first: keys[i] % 11 == 0, request: None })
                            .collect();
                        CutOrder::from_ranking(&best, n, "ranked").with_relevance(relevance)
                    }
                };
                if repeat {
                    let again = order.order[0];
                    order.order.push(again);
                }
                let allowed: Option<Vec<usize>> =
                    allow.map(|keep| (0..n).filter(|&i| keep[i] || i % 4 == 0).collect());
                let fast = p.compact_among_by(allowance, tok, &order, allowed.as_deref(), true);
                let plain = p.compact_among_by(allowance, tok, &order, allowed.as_deref(), false);
                prop_assert_eq!(fast, plain);
            }
        }
    }
}
