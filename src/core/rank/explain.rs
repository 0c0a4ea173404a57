//! Why an entry scored what it did. Explanations are built only for the entries shown, and
//! their parts add up to the score.

use serde::Serialize;
use std::collections::HashMap;

use super::index::RankIndex;
use super::prior::{Boost, HistoryPrior};
use super::query::Query;
use super::score::{Gathered, LexicalParts, prior_boosts};
use super::{Field, Ranking, is_zero};

/// One matched word in one field, with the points it earned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermMatch {
    pub term: String,
    /// The catalog word it matched when that is not the term itself (`law` → `lawyer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub field: Field,
    pub points: f64,
}

/// What the history prior added for an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorMatch {
    pub plans: usize,
    /// Outcome-weighted mean over those plans, -1..1.
    pub outcome: f64,
    pub points: f64,
}

/// One rare query word the entry says, with its plain BM25 points (the rare-word floor).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RareWord {
    pub term: String,
    pub points: f64,
}

/// Why an entry scored what it did: `((Σ matches + pairs) × coverage + name_coverage) ×
/// action + plain_bm25 + prior` is its score — or, when the entry's own rare words earn
/// more, `rare_floor × Σ rare_words + prior`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub name: String,
    pub score: f64,
    pub matches: Vec<TermMatch>,
    /// Points for adjacent intent words found side by side in the name or description.
    pub pairs: f64,
    /// The share of the intent's word weight the entry matched, raised to the `coord`
    /// power: an entry that answers half the question scales down. When the question asks
    /// for several things, the share of the request it answers best.
    pub coverage: f64,
    /// That request (0-based), when the question has several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage_request: Option<usize>,
    /// Points for a name whose words the intent mentions.
    pub name_coverage: f64,
    /// Below 1 when the entry is named for another kind of action than the intent asks.
    pub action: f64,
    /// Points from plain BM25 over the whole entry, at the ranker's share.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plain_bm25: f64,
    /// Set when the entry's own rare words earn more than the rest put together: the
    /// lexical score is this share of their plain BM25 points.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rare_floor: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rare_words: Vec<RareWord>,
    pub prior: Option<PriorMatch>,
    /// Points from the attachments' outlines (see `core::request`), 0 without any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attachment: f64,
    /// Placed ahead of higher scores as the best entry for this request (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_for_request: Option<usize>,
    /// With `best_for_request`: the round of request winners it was placed in (1: the
    /// request's best, 2: its second), by its points for that request's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_round: Option<usize>,
    /// The semantic layer's part, when it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticMatch>,
    /// Placed ahead of higher scores as a lookup step of this entry: it gives one of that
    /// entry's identifier inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookup_for: Option<String>,
    /// What the best other scored entry of its family lent it (see `RankParams::family`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<FamilyMatch>,
}

/// The points an entry's family lent it: a share of the score of `from`, the family's best
/// other scored entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyMatch {
    pub from: String,
    pub points: f64,
}

/// What the semantic layer added: `similarity × scale` points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticMatch {
    /// The entry's best cosine over the question's requests (below 0 counts as 0).
    pub similarity: f64,
    /// Points a similarity of 1 earns: the weight times the best lexical score.
    pub scale: f64,
    pub points: f64,
}

impl Explanation {
    /// The whole explanation on one line, the entry's name as a line of text shows a name:
    /// `memory.store 7.31 = (remember·name 3.10 + note·description 1.02 + pairs 1.00) ×
    /// coverage 0.80 + name 1.20 + prior +0.80 (3 plans)`; an entry named for another kind
    /// of action than asked has its lexical part wrapped in `(…) × other action 0.50`.
    pub fn one_line(&self) -> String {
        self.one_line_naming(&crate::core::terminal_text::name(&self.name))
    }

    /// As [`Self::one_line`], the entry's name as `names` (its catalog's) shows it: spelled
    /// out when it prints like another's (tester 35 F10). Every list an operator reads.
    pub fn one_line_among(&self, names: &crate::core::terminal_text::NamesShown) -> String {
        self.one_line_naming(&names.name(&self.name))
    }

    fn one_line_naming(&self, shown_name: &str) -> String {
        let mut words: Vec<String> = self
            .matches
            .iter()
            .map(|m| {
                let via = m.via.as_ref().map_or(String::new(), |v| format!("→{v}"));
                format!("{}{via}·{} {:.2}", m.term, m.field.label(), m.points)
            })
            .collect();
        if self.pairs > 0.0 && self.rare_floor == 0.0 {
            words.push(format!("pairs {:.2}", self.pairs));
        }
        let request = self
            .coverage_request
            .map_or(String::new(), |r| format!(" (request {})", r + 1));
        let mut parts = Vec::new();
        if self.rare_floor > 0.0 {
            let rare: Vec<String> = self
                .rare_words
                .iter()
                .map(|w| format!("{} {:.2}", w.term, w.points))
                .collect();
            parts.push(format!(
                "rare-word floor {:.2} × plain BM25 ({})",
                self.rare_floor,
                rare.join(" + ")
            ));
        } else {
            let mut lexical = Vec::new();
            if !words.is_empty() {
                lexical.push(format!(
                    "({}) × coverage {:.2}{request}",
                    words.join(" + "),
                    self.coverage
                ));
            }
            if self.name_coverage > 0.0 {
                lexical.push(format!("name {:.2}", self.name_coverage));
            }
            if self.action < 1.0 && !lexical.is_empty() {
                parts.push(format!(
                    "({}) × other action {:.2}",
                    lexical.join(" + "),
                    self.action
                ));
            } else {
                parts.extend(lexical);
            }
            if self.plain_bm25 > 0.0 {
                parts.push(format!("plain BM25 {:.2}", self.plain_bm25));
            }
        }
        // Points that round to 0.00 tell the operator nothing (tester 49 F9: a catalog of one
        // big family read `+ family 0.00 (beside …)` on every line); `--json` keeps them.
        if let Some(f) = self.family.as_ref().filter(|f| f.points >= 0.005) {
            parts.push(format!(
                "family {:.2} (beside {})",
                f.points,
                crate::core::terminal_text::name(&f.from)
            ));
        }
        if let Some(p) = &self.prior {
            parts.push(format!("prior {:+.2} ({} plans)", p.points, p.plans));
        }
        if self.attachment != 0.0 {
            parts.push(format!("attachment outline {:.2}", self.attachment));
        }
        if let Some(m) = &self.semantic {
            parts.push(format!("semantic {:.2} × {:.2}", m.similarity, m.scale));
        }
        if parts.is_empty() {
            parts.push("no match".into());
        }
        let placed = self
            .placement()
            .map_or(String::new(), |p| format!(" [{p}]"));
        // A catalog's name as every line of text shows one: a line break in it (an MCP
        // server named the tool) cannot start a line of its own (tester F1).
        format!(
            "{shown_name} {:.2} = {}{placed}",
            self.score,
            parts.join(" + ")
        )
    }

    /// What [`Explanation::one_line`] says last and a narrow screen cuts first: the
    /// semantic part and the request the entry was placed for, when there are any.
    pub fn tail(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(m) = &self.semantic {
            parts.push(format!("semantic {:.2} × {:.2}", m.similarity, m.scale));
        }
        parts.extend(self.placement());
        (!parts.is_empty()).then(|| parts.join(" · "))
    }

    /// Why the entry stands ahead of higher scores, if it does.
    fn placement(&self) -> Option<String> {
        match (&self.lookup_for, self.best_for_request) {
            (Some(entry), _) => Some(format!(
                "placed as a lookup for {}",
                crate::core::terminal_text::name(entry)
            )),
            // By its points for that request's words, not the score shown (tester 10
            // T10-20: a second-round pick read "the best" below a higher-scoring entry).
            (None, Some(r)) => {
                let nth = match self.request_round {
                    Some(2) => "second",
                    Some(n) if n > 2 => "later",
                    _ => "first",
                };
                Some(format!(
                    "placed {nth} for request {} (points for its words)",
                    r + 1
                ))
            }
            (None, None) => None,
        }
    }

    /// What the parts add up to (the score, up to rounding).
    pub fn total(&self) -> f64 {
        let words: f64 = self.matches.iter().map(|m| m.points).sum();
        let lexical = if self.rare_floor > 0.0 {
            self.rare_floor * self.rare_words.iter().map(|w| w.points).sum::<f64>()
        } else {
            ((words + self.pairs) * self.coverage + self.name_coverage) * self.action
                + self.plain_bm25
        };
        lexical
            + self.family.as_ref().map_or(0.0, |f| f.points)
            + self.prior.as_ref().map_or(0.0, |p| p.points)
            + self.attachment
            + self.semantic.as_ref().map_or(0.0, |m| m.points)
    }
}

impl RankIndex {
    fn query_for(&self, ranking: &Ranking) -> Query {
        self.query_of(
            ranking.terms.clone(),
            ranking.pairs.clone(),
            ranking.term_requests.clone(),
            ranking.term_sources.clone(),
            ranking.requests.len().max(1),
        )
    }

    /// Why entry `index` scored what it did in `ranking`: every term's points by field, the
    /// pair bonus, the coverage factor, name coverage and the prior, which add up to the
    /// score.
    pub fn explain(
        &self,
        ranking: &Ranking,
        index: usize,
        prior: Option<&HistoryPrior>,
    ) -> Explanation {
        let query = self.query_for(ranking);
        let boosts = prior_boosts(&query, prior);
        self.explain_with(ranking, index, &query, boosts.as_ref())
    }

    /// Explanations of several entries of one ranking, sharing the work they have in common.
    pub fn explain_top(
        &self,
        ranking: &Ranking,
        indices: &[usize],
        prior: Option<&HistoryPrior>,
    ) -> Vec<Explanation> {
        let query = self.query_for(ranking);
        let boosts = prior_boosts(&query, prior);
        indices
            .iter()
            .map(|&i| self.explain_with(ranking, i, &query, boosts.as_ref()))
            .collect()
    }

    fn explain_with(
        &self,
        ranking: &Ranking,
        index: usize,
        query: &Query,
        boosts: Option<&HashMap<&str, Boost>>,
    ) -> Explanation {
        let nr = query.request_count();
        let mut matches = Vec::new();
        let mut rare_words = Vec::new();
        let mut words = 0.0;
        let mut plain = 0.0;
        let mut floor = 0.0;
        let mut matched = vec![0.0; nr];
        for (i, t) in query.terms.iter().enumerate() {
            let Some(hit) = self.best_match(query, i, index) else {
                continue;
            };
            words += hit.points;
            // Plain BM25 counts the word itself, whichever way its best match went.
            let own = query.ids[i]
                .and_then(|id| self.posting(id, index))
                .map_or(0.0, |p| query.idf[i] * p.plain);
            plain += own;
            if own > 0.0 && self.is_rare(query.idf[i]) {
                floor += own;
                rare_words.push(RareWord {
                    term: t.clone(),
                    points: own,
                });
            }
            let mask = if query.per_request { query.masks[i] } else { 1 };
            for (r, m) in matched.iter_mut().enumerate() {
                if mask & (1 << r) != 0 {
                    *m += hit.matched_idf;
                }
            }
            let Some(ftf) = self.field_tf(hit.via, index) else {
                continue;
            };
            let combined: f64 = ftf.iter().sum();
            for (f, part) in ftf.iter().enumerate() {
                if *part > 0.0 {
                    matches.push(TermMatch {
                        term: t.clone(),
                        via: (self.word(hit.via) != t).then(|| self.word(hit.via).to_string()),
                        field: Field::ALL[f],
                        points: hit.points * part / combined,
                    });
                }
            }
        }
        let pair_hits = query
            .pair_keys
            .iter()
            .filter(|&&k| self.pair_docs(k).binary_search(&(index as u32)).is_ok())
            .count();
        let scored = ranking.order.iter().find(|s| s.index == index);
        let prior_match = match (boosts, scored) {
            (Some(boosts), Some(s)) if s.prior != 0.0 => {
                boosts.get(self.name(index)).map(|b| PriorMatch {
                    plans: b.plans,
                    outcome: b.outcome,
                    points: s.prior,
                })
            }
            _ => None,
        };
        let parts = if matches.is_empty() {
            LexicalParts::NONE
        } else {
            let g = Gathered {
                words,
                plain,
                matched: &matched,
                floor,
            };
            self.lexical_parts(index, &g, pair_hits, query, |id| query.reach(id))
        };
        let floored = parts.floored();
        matches.sort_by(|a, b| b.points.total_cmp(&a.points));
        Explanation {
            name: self.name(index).to_string(),
            score: scored.map_or(0.0, |s| s.score),
            matches,
            pairs: parts.pairs,
            coverage: parts.coverage,
            coverage_request: parts.request,
            name_coverage: parts.name,
            action: parts.action,
            plain_bm25: if floored { 0.0 } else { parts.plain },
            rare_floor: if floored { self.params.rare_floor } else { 0.0 },
            rare_words: if floored { rare_words } else { Vec::new() },
            prior: prior_match,
            attachment: scored.map_or(0.0, |s| s.attachment),
            best_for_request: scored.and_then(|s| s.best_for_request),
            request_round: scored.and_then(|s| s.best_for_request).and_then(|_| {
                let at = ranking.order.iter().position(|s| s.index == index)?;
                ranking.head.get(at).map(|p| p.round + 1)
            }),
            semantic: semantic_match(ranking, scored),
            lookup_for: scored
                .and_then(|s| s.lookup_for)
                .map(|a| self.name(a).to_string()),
            family: scored.and_then(|s| {
                Some(FamilyMatch {
                    from: self.name(s.family_from?).to_string(),
                    points: s.family,
                })
            }),
        }
    }
}

/// The semantic part of an entry's score, when the layer was on for `ranking`.
fn semantic_match(ranking: &Ranking, scored: Option<&super::Scored>) -> Option<SemanticMatch> {
    let scale = ranking.semantic_scale?;
    let points = scored.map_or(0.0, |s| s.semantic);
    Some(SemanticMatch {
        similarity: if scale > 0.0 { points / scale } else { 0.0 },
        scale,
        points,
    })
}
