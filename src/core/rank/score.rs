//! Ranking: every entry's lexical score for an intent, the history prior, and the order —
//! each request's best entry first when a question asks for several things.

use std::collections::HashMap;

use super::index::RankIndex;
use super::prior::{Boost, HistoryPrior};
use super::query::Query;
use super::{Confidence, PRIOR_STRENGTH, Ranking, Scored};

/// One entry's best match of one query word.
pub(super) struct TermHit {
    /// The vocabulary word that matched (the query word itself, or one it reaches).
    pub via: u32,
    pub doc: u32,
    pub points: f64,
    pub matched_idf: f64,
    /// Matched through the word itself, not a related one.
    pub direct: bool,
}

/// The pieces of a lexical score: `max(((words + pairs) × coverage + name) × action,
/// floor)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct LexicalParts {
    pub words: f64,
    pub pairs: f64,
    pub coverage: f64,
    /// The request the coverage was taken from, when the question has several.
    pub request: Option<usize>,
    pub name: f64,
    pub action: f64,
    /// Points the entry's own rare words guarantee it.
    pub floor: f64,
}

impl LexicalParts {
    pub const NONE: LexicalParts = LexicalParts {
        words: 0.0,
        pairs: 0.0,
        coverage: 0.0,
        request: None,
        name: 0.0,
        action: 1.0,
        floor: 0.0,
    };

    fn main(&self) -> f64 {
        ((self.words + self.pairs) * self.coverage + self.name) * self.action
    }

    /// Whether the rare-word floor is what the score is.
    pub fn floored(&self) -> bool {
        self.floor > self.main()
    }

    pub fn total(&self) -> f64 {
        self.main().max(self.floor)
    }
}

/// What one entry gathered over the query's words.
pub(super) struct Gathered<'a> {
    pub words: f64,
    /// Per request: matched IDF.
    pub matched: &'a [f64],
    pub floor: f64,
}

impl RankIndex {
    /// Every match of one query word (the `i`th), through itself and the words it reaches;
    /// an entry may come more than once (its best is what counts).
    pub(super) fn each_match(&self, query: &Query, i: usize, mut f: impl FnMut(TermHit)) {
        let term_idf = query.idf[i];
        let itself = query.ids[i].map(|id| (id, 1.0));
        for (via, weight) in itself.into_iter().chain(query.related[i].iter().copied()) {
            let direct = Some(via) == query.ids[i];
            // A related word never counts for more than the word itself would.
            let idf = if direct {
                term_idf
            } else {
                self.word_idf(via).min(term_idf)
            };
            for p in self.postings(via) {
                f(TermHit {
                    via,
                    doc: p.doc,
                    points: weight * self.term_points(idf, p.combined),
                    matched_idf: weight * idf * p.covers,
                    direct,
                });
            }
        }
    }

    /// One entry's best match of one query word (the `i`th).
    pub(super) fn best_match(&self, query: &Query, i: usize, doc: usize) -> Option<TermHit> {
        let term_idf = query.idf[i];
        let itself = query.ids[i].map(|id| (id, 1.0));
        let mut best: Option<TermHit> = None;
        for (via, weight) in itself.into_iter().chain(query.related[i].iter().copied()) {
            let Some(p) = self.posting(via, doc) else {
                continue;
            };
            let direct = Some(via) == query.ids[i];
            let idf = if direct {
                term_idf
            } else {
                self.word_idf(via).min(term_idf)
            };
            let points = weight * self.term_points(idf, p.combined);
            if best.as_ref().is_none_or(|b| points > b.points) {
                best = Some(TermHit {
                    via,
                    doc: p.doc,
                    points,
                    matched_idf: weight * idf * p.covers,
                    direct,
                });
            }
        }
        best
    }

    /// Whether a query word is rare enough for the floor.
    pub(super) fn is_rare(&self, idf: f64) -> bool {
        self.params.rare_floor > 0.0 && idf >= self.params.rare_idf * self.max_idf
    }

    /// Name coverage: the IDF share of the entry's name words that the intent reaches.
    fn name_coverage(&self, doc: usize, query: &Query) -> f64 {
        let mut hit = 0.0;
        let mut total = 0.0;
        for &(id, idf) in &self.name_terms[doc] {
            hit += query.reach(id) * idf;
            total += idf;
        }
        if total == 0.0 { 0.0 } else { hit / total }
    }

    /// An entry's lexical score from what it gathered, put together the one way both
    /// ranking and explaining use.
    pub(super) fn lexical_parts(
        &self,
        doc: usize,
        g: &Gathered,
        pair_hits: usize,
        query: &Query,
    ) -> LexicalParts {
        let pairs = self.params.pair * pair_hits as f64;
        // Coverage: the share of the best-covered request's word weight the entry matches.
        let (mut coverage, mut request) = (1.0, None);
        if self.params.coord > 0.0 {
            let (mut best, mut best_r) = (-1.0, 0);
            for (r, w) in query.requests.iter().enumerate().take(query.request_count()) {
                let share = if w.idf_total > 0.0 {
                    (g.matched[r] / w.idf_total).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                if share > best {
                    (best, best_r) = (share, r);
                }
            }
            let any_weight = query.requests.iter().any(|w| w.idf_total > 0.0);
            if any_weight {
                coverage = best.max(0.0).powf(self.params.coord);
                request = query.per_request.then_some(best_r);
            }
        }
        let cov = self.name_coverage(doc, query);
        let name = if cov > 0.0 {
            self.params.name_coverage * cov * cov * self.max_name_idf[doc]
        } else {
            0.0
        };
        // The action asked: the covering request's, or the whole question's.
        let asked = match request {
            Some(r) => query.requests[r].actions,
            None => query.requests.iter().fold(0, |a, w| a | w.actions),
        };
        let conflict = asked != 0 && self.name_actions[doc] != 0 && asked & self.name_actions[doc] == 0;
        LexicalParts {
            words: g.words,
            pairs,
            coverage,
            request,
            name,
            action: if conflict {
                self.params.action_conflict
            } else {
                1.0
            },
            floor: self.params.rare_floor * g.floor,
        }
    }

    /// Rank every entry for `intent`. Ties keep catalog order.
    pub fn rank(&self, intent: &str, prior: Option<&HistoryPrior>) -> Ranking {
        let (query, requests) = self.query(intent);
        let n = self.len();
        let nr = query.request_count();
        let mut words = vec![0f64; n];
        let mut floor = vec![0f64; n];
        let mut matched = vec![0f64; n * nr];
        let mut points = vec![0f64; n * nr];
        let mut touched: Vec<u32> = Vec::new();
        let mut seen = vec![false; n];
        // Per query word, each entry's best match (scratch, reset after each word).
        let mut term_points = vec![0f64; n];
        let mut term_idf = vec![0f64; n];
        let mut term_direct = vec![false; n];
        let mut term_touched: Vec<u32> = Vec::new();
        for i in 0..query.terms.len() {
            self.each_match(&query, i, |hit| {
                let d = hit.doc as usize;
                if term_points[d] == 0.0 {
                    term_touched.push(hit.doc);
                }
                if hit.points > term_points[d] {
                    term_points[d] = hit.points;
                    term_idf[d] = hit.matched_idf;
                    term_direct[d] = hit.direct;
                }
            });
            let mask = if query.per_request { query.masks[i] } else { 1 };
            let rare = self.is_rare(query.idf[i]);
            for d in term_touched.drain(..) {
                let d = d as usize;
                if !seen[d] {
                    seen[d] = true;
                    touched.push(d as u32);
                }
                words[d] += term_points[d];
                if rare && term_direct[d] {
                    floor[d] += term_points[d];
                }
                for r in 0..nr {
                    if mask & (1 << r) != 0 {
                        matched[d * nr + r] += term_idf[d];
                        points[d * nr + r] += term_points[d];
                    }
                }
                term_points[d] = 0.0;
                term_idf[d] = 0.0;
                term_direct[d] = false;
            }
        }
        let mut pair_hits = vec![0u16; n];
        for &key in &query.pair_keys {
            for &d in self.pair_docs(key) {
                pair_hits[d as usize] = pair_hits[d as usize].saturating_add(1);
            }
        }
        let mut lexical = vec![0f64; n];
        let mut covered = vec![0f64; n];
        for &d in &touched {
            let d = d as usize;
            let g = Gathered {
                words: words[d],
                matched: &matched[d * nr..(d + 1) * nr],
                floor: floor[d],
            };
            let parts = self.lexical_parts(d, &g, usize::from(pair_hits[d]), &query);
            lexical[d] = parts.total();
            covered[d] = best_share(&g, &query);
        }
        let best_lexical = touched
            .iter()
            .map(|&d| lexical[d as usize])
            .fold(0.0, f64::max);
        let boosts = prior_boosts(&query, prior).unwrap_or_default();
        let prior_of = |i: usize| {
            boosts
                .get(self.name(i))
                .map_or(0.0, |b| b.strength * PRIOR_STRENGTH * best_lexical.max(1.0))
        };
        let scored = |i: usize| {
            let prior = if boosts.is_empty() { 0.0 } else { prior_of(i) };
            Scored {
                index: i,
                score: lexical[i] + prior,
                lexical: lexical[i],
                prior,
                attachment: 0.0,
                best_for_request: None,
            }
        };
        // Entries with a score sort; the rest keep catalog order between the positive and
        // the negative ones (a sort by score with ties in catalog order, without sorting
        // what no word reached).
        let mut nonzero: Vec<Scored> = Vec::with_capacity(touched.len());
        let mut zero: Vec<usize> = Vec::new();
        if boosts.is_empty() {
            touched.sort_unstable();
            let mut t = touched.iter().peekable();
            for i in 0..n {
                if t.peek().is_some_and(|&&d| d as usize == i) {
                    t.next();
                    let s = scored(i);
                    if s.score != 0.0 {
                        nonzero.push(s);
                        continue;
                    }
                }
                zero.push(i);
            }
        } else {
            for i in 0..n {
                let s = scored(i);
                if s.score != 0.0 {
                    nonzero.push(s);
                } else {
                    zero.push(i);
                }
            }
        }
        nonzero.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        let split = nonzero.partition_point(|s| s.score > 0.0);
        let negative = nonzero.split_off(split);
        let mut order = nonzero;
        order.extend(zero.into_iter().map(scored));
        order.extend(negative);
        if query.per_request && self.params.diversify > 0 {
            self.diversify(&mut order, &query, &points, &lexical);
        }
        let confidence = confidence(&order, &covered);
        Ranking {
            terms: query.terms,
            requests,
            pairs: query.pairs,
            term_requests: query.masks,
            order,
            confidence,
        }
    }

    /// Each request's best entries first: for `diversify` rounds, every request's next-best
    /// entry (by its points for that request's words, scaled like the entry's score) goes
    /// ahead of everything not yet placed; within a round, by score. The rest keep score
    /// order.
    fn diversify(&self, order: &mut Vec<Scored>, query: &Query, points: &[f64], lexical: &[f64]) {
        let nr = query.request_count();
        // Only entries with a positive score compete.
        let live = order.partition_point(|s| s.score > 0.0);
        if live == 0 {
            return;
        }
        let mut placed = vec![false; order.len()];
        let mut head: Vec<Scored> = Vec::new();
        for _ in 0..self.params.diversify {
            let mut round: Vec<(usize, usize)> = Vec::new();
            for r in 0..nr {
                let best = order[..live]
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !placed[*k])
                    .filter(|(_, s)| points[s.index * nr + r] > 0.0)
                    .max_by(|(ka, a), (kb, b)| {
                        let pa = points[a.index * nr + r] * lexical[a.index].signum();
                        let pb = points[b.index * nr + r] * lexical[b.index].signum();
                        pa.total_cmp(&pb)
                            .then(a.score.total_cmp(&b.score))
                            .then(kb.cmp(ka))
                    })
                    .map(|(k, _)| k);
                if let Some(k) = best
                    && !round.iter().any(|&(kk, _)| kk == k)
                {
                    round.push((k, r));
                }
            }
            round.sort_by_key(|&(k, _)| k);
            for (k, r) in round {
                placed[k] = true;
                let mut s = order[k];
                s.best_for_request = Some(r);
                head.push(s);
            }
        }
        // Only a placement ahead of a higher score is worth marking.
        let mut rest: Vec<Scored> = order
            .iter()
            .enumerate()
            .filter(|(k, _)| !placed[*k])
            .map(|(_, s)| *s)
            .collect();
        let mut out = head;
        let top_rest = rest.first().map_or(f64::NEG_INFINITY, |s| s.score);
        for s in &mut out {
            if s.score >= top_rest {
                s.best_for_request = None;
            }
        }
        out.append(&mut rest);
        *order = out;
    }
}

/// The raw share of its best request an entry covers, for confidence.
fn best_share(g: &Gathered, query: &Query) -> f64 {
    query
        .requests
        .iter()
        .take(query.request_count())
        .enumerate()
        .filter(|(_, w)| w.idf_total > 0.0)
        .map(|(r, w)| (g.matched[r] / w.idf_total).clamp(0.0, 1.0))
        .fold(0.0, f64::max)
}

pub(super) fn prior_boosts<'p>(
    query: &Query,
    prior: Option<&'p HistoryPrior>,
) -> Option<HashMap<&'p str, Boost>> {
    let terms: std::collections::HashSet<&str> = query.terms.iter().map(String::as_str).collect();
    prior.map(|p| p.boosts(&terms))
}

/// How sure a ranking is of its first entry: its margin over the second, times the share of
/// the intent's (or its best request's) word weight it matched.
fn confidence(order: &[Scored], covered: &[f64]) -> Confidence {
    let s1 = order.first().map_or(0.0, |s| s.score);
    let s2 = order.get(1).map_or(0.0, |s| s.score);
    if s1 <= 0.0 {
        return Confidence {
            value: 0.0,
            margin: 0.0,
            coverage: 0.0,
        };
    }
    let margin = ((s1 - s2) / s1).clamp(0.0, 1.0);
    let coverage = covered[order[0].index].clamp(0.0, 1.0);
    Confidence {
        value: margin * coverage,
        margin,
        coverage,
    }
}
