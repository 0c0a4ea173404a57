//! The history prior: past plans for similar intents, weighted by how they turned out.

use serde::Serialize;
use std::collections::{HashMap, HashSet};

use crate::core::text;

use super::PRIOR_MIN_SIMILARITY;

/// How much of a past intent the prior reads, in bytes: its opening, up to the last whole
/// word. A request says what it is for in its first words; what follows in a long one (a
/// pasted page, a log) is its material, and reading all of it (a stored intent may hold
/// 1 MiB) on every preview made the cost grow with the history's longest intents. Far above
/// any sample or labelled intent (the longest is 84 bytes), so the ranking figures stand.
pub const PRIOR_INTENT_BYTES: usize = 1024;

/// The part of `intent` the prior reads: the whole of a short one; of a longer one the
/// opening [`PRIOR_INTENT_BYTES`], less a word the cut would split.
pub fn prior_intent(intent: &str) -> &str {
    let cut = text::opening(intent, PRIOR_INTENT_BYTES);
    let splits_a_word = intent[cut.len()..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace());
    match cut.rfind(char::is_whitespace) {
        Some(end) if splits_a_word => &cut[..end],
        _ => cut,
    }
}

/// One past plan, as the history prior sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PastPlan {
    /// The intent; the prior reads its [`prior_intent`] (a store may hand over no more).
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
                    terms: text::terms(prior_intent(&p.intent)).into_iter().collect(),
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

/// Words of past intents, per tool their followed plans used: "latest updates" said often
/// enough before a news search teaches the news search those words. Mined from the history
/// outside the core and handed to [`super::RankIndex::build`], where they form the entry's
/// `learned` field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnedWords {
    by_tool: HashMap<String, Vec<String>>,
}

/// Learned words per tool at most (the most frequent are kept).
const LEARNED_PER_TOOL: usize = 64;
/// A learned word counts at most this often for one tool (BM25 saturates long before).
const LEARNED_TF_MAX: usize = 10;
/// A tool learns a word only when at least this share of the different intents of good plans
/// that say the word had plans that used the tool: a word said before every kind of work ("pricing" in plans that
/// wrote posts, sent messages and made images) teaches no tool anything, while one said
/// mostly before one tool's work teaches that tool.
pub const LEARNED_MIN_SHARE: f64 = 0.5;
/// A tool learns a word only from at least this many good plans with different intents: one
/// request is an anecdote, not a habit, however often it was sent again word for word.
pub const LEARNED_MIN_PLANS: usize = 2;

impl LearnedWords {
    /// From plans that went well (outcome above 0): every content word of the intent, once
    /// per intent, for each tool the plan used — kept for a tool only when good plans of at
    /// least [`LEARNED_MIN_PLANS`] different intents, and at least [`LEARNED_MIN_SHARE`] of
    /// the different intents that said the word, used the tool. Words that say what is done
    /// (a kind of action, "get", "delete"; a request verb, "open", "send", "play") are never
    /// learned: they say what is done, not to what, and the ranker reads them already.
    pub fn from_plans(plans: &[PastPlan]) -> LearnedWords {
        // Per tool, per word: the distinct intents (as word sets, each numbered once: a
        // word's set holds numbers, not a copy of the intent per word) of the good plans that
        // used the tool and said the word; and per word, the distinct intents that said it.
        // Intents, not plans, on both sides of the share: one request sent again word for
        // word neither teaches a word nor outvotes what different requests taught.
        let mut counts: HashMap<&str, HashMap<String, HashSet<usize>>> = HashMap::new();
        let mut said: HashMap<String, HashSet<usize>> = HashMap::new();
        let mut intent_ids: HashMap<String, usize> = HashMap::new();
        for plan in plans.iter().filter(|p| p.outcome > 0.0) {
            let mut terms = text::terms(prior_intent(&plan.intent));
            terms.sort();
            terms.dedup();
            terms.retain(|t| !super::query::says_what_is_done(t));
            let next = intent_ids.len();
            let intent = *intent_ids.entry(terms.join(" ")).or_insert(next);
            for t in &terms {
                said.entry(t.clone()).or_default().insert(intent);
            }
            let mut tools: Vec<&str> = plan.tools.iter().map(String::as_str).collect();
            tools.sort_unstable();
            tools.dedup();
            for tool in tools {
                let c = counts.entry(tool).or_default();
                for t in &terms {
                    c.entry(t.clone()).or_default().insert(intent);
                }
            }
        }
        let by_tool = counts
            .into_iter()
            .map(|(tool, c)| {
                let mut words: Vec<(String, usize)> = c
                    .into_iter()
                    .filter(|(w, intents)| {
                        let intents_saying = said.get(w).map_or(0, HashSet::len).max(1);
                        intents.len() >= LEARNED_MIN_PLANS
                            && intents.len() as f64 >= LEARNED_MIN_SHARE * intents_saying as f64
                    })
                    .map(|(w, intents)| (w, intents.len()))
                    .collect();
                words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                words.truncate(LEARNED_PER_TOOL);
                let list: Vec<String> = words
                    .into_iter()
                    .flat_map(|(w, k)| std::iter::repeat_n(w, k.min(LEARNED_TF_MAX)))
                    .collect();
                (tool.to_string(), list)
            })
            .filter(|(_, list)| !list.is_empty())
            .collect();
        LearnedWords { by_tool }
    }

    /// The words learned for a tool, each as often as different intents said it.
    pub fn words_for(&self, tool: &str) -> Option<&[String]> {
        self.by_tool.get(tool).map(Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.by_tool.is_empty()
    }
}
