//! Past plans in the prompt (issue 18 item 7; seed 003's PR #2 prior): for an intent whose
//! shape has plans an agent followed, the steps those plans produced go into the request as
//! a part of their own — "Steps produced for similar intents; refine if needed:" — so a
//! model refines a decomposition that worked instead of inventing one. Pure: the store
//! hands in the followed plans; this groups them by intent shape
//! ([`shape`](crate::core::history::shape)), counts the exact decompositions and renders the
//! part within its bounds.

use serde::Serialize;
use std::collections::HashMap;

use crate::core::budget::Tokenizer;
use crate::core::history::shape;
use crate::core::tokens;

/// The part's first line.
pub const PRIOR_HEADING: &str = "Steps produced for similar intents; refine if needed:";

/// A decomposition goes into the prompt only when at least this many followed plans of the
/// shape produced exactly it (the same tools in the same order). One plan an agent followed
/// once may be an accident of that day's catalog or wording; two that agree step for step
/// are the least evidence that this is how the shape's work gets done. Below it the request
/// has no prior part at all.
pub const PRIOR_MIN_AGREEING: usize = 2;

/// At most this many decompositions are sent: the most used and one alternative, so the
/// model sees that more than one way has worked without the prior becoming a second
/// catalog.
pub const PRIOR_MAX_DECOMPOSITIONS: usize = 2;

/// Most tokens the part may take: 1% of the smallest window shipped (the fallback row's
/// 16,000 tokens), room for two decompositions of about eight steps each. A decomposition
/// that would take the part over it is left out (and said so); when not even the most used
/// one fits, there is no part.
pub const PRIOR_MAX_TOKENS: usize = 160;

/// Plan ids kept per decomposition (most recent first): enough to say which plans it came
/// from, without a list as long as the history.
pub const PRIOR_IDS_LISTED: usize = 5;

/// A plan an agent followed, as the store gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowedPlan {
    pub id: String,
    /// Its intent's shape.
    pub shape: String,
    /// Step tools a caller could run, in order (guard-demoted steps left out).
    pub tools: Vec<String>,
}

/// One decomposition of a shape and the followed plans that produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decomposition {
    pub tools: Vec<String>,
    /// How many followed plans produced exactly these steps.
    pub plans: usize,
    /// Up to [`PRIOR_IDS_LISTED`] of them, most recent first.
    pub plan_ids: Vec<String>,
}

/// What the history holds for one intent's shape: every decomposition with enough agreement
/// ([`PRIOR_MIN_AGREEING`]), most used first (ties: the most recently followed first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PastSteps {
    pub shape: String,
    /// Followed plans of this shape among those read.
    pub followed: usize,
    pub decompositions: Vec<Decomposition>,
}

/// Followed plans grouped by intent shape: built once from the store, asked per intent.
#[derive(Debug, Clone, Default)]
pub struct PastStepsIndex {
    /// Each shape's plans in the order given (the store gives the most recent first).
    by_shape: HashMap<String, Vec<FollowedPlan>>,
    plans: usize,
}

impl PastStepsIndex {
    /// `plans` most recent first.
    pub fn new(plans: Vec<FollowedPlan>) -> PastStepsIndex {
        let mut by_shape: HashMap<String, Vec<FollowedPlan>> = HashMap::new();
        let n = plans.len();
        for p in plans {
            by_shape.entry(p.shape.clone()).or_default().push(p);
        }
        PastStepsIndex { by_shape, plans: n }
    }

    /// How many followed plans it was built from.
    pub fn plans(&self) -> usize {
        self.plans
    }

    /// The evidence for `intent`'s shape, or `None` when no decomposition has enough.
    pub fn for_intent(&self, intent: &str) -> Option<PastSteps> {
        self.for_shape(&shape(intent))
    }

    pub fn for_shape(&self, shape: &str) -> Option<PastSteps> {
        let plans = self.by_shape.get(shape)?;
        let mut found: Vec<Decomposition> = Vec::new();
        let mut index: HashMap<&[String], usize> = HashMap::new();
        for p in plans.iter().filter(|p| !p.tools.is_empty()) {
            let i = *index.entry(p.tools.as_slice()).or_insert_with(|| {
                found.push(Decomposition {
                    tools: p.tools.clone(),
                    plans: 0,
                    plan_ids: Vec::new(),
                });
                found.len() - 1
            });
            let d = &mut found[i];
            d.plans += 1;
            if d.plan_ids.len() < PRIOR_IDS_LISTED {
                d.plan_ids.push(p.id.clone());
            }
        }
        found.retain(|d| d.plans >= PRIOR_MIN_AGREEING);
        // Stable: among equals, the one followed most recently (seen first) stays first.
        found.sort_by_key(|d| std::cmp::Reverse(d.plans));
        (!found.is_empty()).then(|| PastSteps {
            shape: shape.to_string(),
            followed: plans.len(),
            decompositions: found,
        })
    }
}

/// Why a decomposition with enough agreement did not go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftOutWhy {
    /// It names a tool today's catalog does not have.
    UnknownTool,
    /// [`PRIOR_MAX_DECOMPOSITIONS`] were already sent.
    OverCount,
    /// It would take the part over [`PRIOR_MAX_TOKENS`].
    OverTokens,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub tools: Vec<String>,
    pub plans: usize,
    pub why: LeftOutWhy,
}

/// The prior as one request sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorPart {
    pub shape: String,
    /// Followed plans of the shape among those read.
    pub followed: usize,
    /// The decompositions sent, most used first, with the plans they came from.
    pub sent: Vec<Decomposition>,
    pub left_out: Vec<LeftOut>,
    /// The part's tokens with the row's tokenizer: counted against the window like every
    /// other part, before the catalog's allowance.
    pub tokens: usize,
    /// The part's text, as sent.
    pub text: String,
}

/// `- memory.store → blog.draft (followed in 3 past plans)`
fn line(d: &Decomposition) -> String {
    format!(
        "- {} (followed in {} past plans)",
        d.tools.join(" → "),
        d.plans
    )
}

/// The part for one request: the most used decompositions whose tools are all `known` (in
/// today's catalog), at most [`PRIOR_MAX_DECOMPOSITIONS`] and [`PRIOR_MAX_TOKENS`]. `None`
/// when none is left to send.
pub fn prior_part(
    past: &PastSteps,
    known: impl Fn(&str) -> bool,
    tokenizer: Tokenizer,
) -> Option<PriorPart> {
    let mut text = PRIOR_HEADING.to_string();
    let mut sent = Vec::new();
    let mut left_out = Vec::new();
    for d in &past.decompositions {
        let why = if !d.tools.iter().all(|t| known(t)) {
            Some(LeftOutWhy::UnknownTool)
        } else if sent.len() >= PRIOR_MAX_DECOMPOSITIONS {
            Some(LeftOutWhy::OverCount)
        } else {
            let longer = format!("{text}\n{}", line(d));
            if tokens::count(tokenizer, &longer).tokens > PRIOR_MAX_TOKENS {
                Some(LeftOutWhy::OverTokens)
            } else {
                text = longer;
                None
            }
        };
        match why {
            Some(why) => left_out.push(LeftOut {
                tools: d.tools.clone(),
                plans: d.plans,
                why,
            }),
            None => sent.push(d.clone()),
        }
    }
    if sent.is_empty() {
        return None;
    }
    Some(PriorPart {
        shape: past.shape.clone(),
        followed: past.followed,
        sent,
        left_out,
        tokens: tokens::count(tokenizer, &text).tokens,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn followed(id: &str, intent: &str, tools: &[&str]) -> FollowedPlan {
        FollowedPlan {
            id: id.into(),
            shape: shape(intent),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    const BLOG: &str = "draft a blog post about the launch";

    fn index() -> PastStepsIndex {
        PastStepsIndex::new(vec![
            followed("p9", BLOG, &["memory.store", "blog.draft"]),
            followed("p8", "the launch: draft blog posts", &["blog.draft"]),
            followed("p7", BLOG, &["memory.store", "blog.draft"]),
            followed("p6", BLOG, &["blog.draft"]),
            followed("p5", BLOG, &["web.search", "blog.draft"]),
            followed("p4", BLOG, &["memory.store", "blog.draft"]),
            followed("p3", "publish a blog", &["blog.publish"]),
            followed("p2", "publish a blog", &["blog.publish"]),
        ])
    }

    #[test]
    fn decompositions_need_agreement_and_come_most_used_first() {
        let ix = index();
        assert_eq!(ix.plans(), 8);
        let past = ix.for_intent("Draft a blog post about the launch").unwrap();
        assert_eq!(past.followed, 6);
        let got: Vec<(Vec<&str>, usize, Vec<&str>)> = past
            .decompositions
            .iter()
            .map(|d| {
                (
                    d.tools.iter().map(String::as_str).collect(),
                    d.plans,
                    d.plan_ids.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    vec!["memory.store", "blog.draft"],
                    3,
                    vec!["p9", "p7", "p4"]
                ),
                (vec!["blog.draft"], 2, vec!["p8", "p6"]),
            ],
            "web.search → blog.draft was followed once: not evidence"
        );
        assert!(ix.for_intent("summarise the quarterly report").is_none());
        // One followed plan is not enough.
        let one = PastStepsIndex::new(vec![followed("p1", BLOG, &["blog.draft"])]);
        assert!(one.for_intent(BLOG).is_none());
    }

    #[test]
    fn the_part_keeps_to_known_tools_its_count_and_its_tokens() {
        let past = index().for_intent(BLOG).unwrap();
        let all = prior_part(&past, |_| true, Tokenizer::O200k).unwrap();
        assert_eq!(
            all.text,
            "Steps produced for similar intents; refine if needed:\n\
             - memory.store → blog.draft (followed in 3 past plans)\n\
             - blog.draft (followed in 2 past plans)"
        );
        assert_eq!(
            all.tokens,
            tokens::count(Tokenizer::O200k, &all.text).tokens
        );
        assert!(all.left_out.is_empty());
        // A tool gone from the catalog takes its decomposition out, not the others.
        let without = prior_part(&past, |t| t != "memory.store", Tokenizer::O200k).unwrap();
        assert_eq!(without.sent.len(), 1);
        assert_eq!(without.left_out[0].why, LeftOutWhy::UnknownTool);
        assert!(!without.text.contains("memory.store"));
        assert!(prior_part(&past, |_| false, Tokenizer::O200k).is_none());
        // Over the count.
        let mut many = past.clone();
        for n in 0..3 {
            many.decompositions.push(Decomposition {
                tools: vec![format!("tool.{n}")],
                plans: 2,
                plan_ids: vec![],
            });
        }
        let part = prior_part(&many, |_| true, Tokenizer::O200k).unwrap();
        assert_eq!(part.sent.len(), PRIOR_MAX_DECOMPOSITIONS);
        assert_eq!(part.left_out.len(), 3);
        assert!(part.left_out.iter().all(|l| l.why == LeftOutWhy::OverCount));
        // Over the tokens: a decomposition too long to fit is left out, said so.
        let long = PastSteps {
            shape: "s".into(),
            followed: 4,
            decompositions: vec![
                Decomposition {
                    tools: (0..80).map(|n| format!("pack{n}.action")).collect(),
                    plans: 3,
                    plan_ids: vec![],
                },
                Decomposition {
                    tools: vec!["blog.draft".into()],
                    plans: 2,
                    plan_ids: vec![],
                },
            ],
        };
        let part = prior_part(&long, |_| true, Tokenizer::Estimate).unwrap();
        assert_eq!(part.sent[0].tools, vec!["blog.draft"]);
        assert_eq!(part.left_out[0].why, LeftOutWhy::OverTokens);
        assert!(part.tokens <= PRIOR_MAX_TOKENS);
    }
}
