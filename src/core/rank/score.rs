//! Ranking: every entry's lexical score for an intent, the history prior, and the order —
//! each request's best entry first when a question asks for several things.

use std::cell::RefCell;
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
    /// Plain BM25 points of a direct match (0 through a related word).
    pub plain: f64,
}

/// The pieces of a lexical score: `max(((words + pairs) × coverage + name) × action +
/// plain, floor)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct LexicalParts {
    pub words: f64,
    pub pairs: f64,
    pub coverage: f64,
    /// The request the coverage was taken from, when the question has several.
    pub request: Option<usize>,
    pub name: f64,
    pub action: f64,
    /// The share of plain BM25 added.
    pub plain: f64,
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
        plain: 0.0,
        floor: 0.0,
    };

    fn main(&self) -> f64 {
        ((self.words + self.pairs) * self.coverage + self.name) * self.action + self.plain
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
    /// Plain BM25 points over every query word the entry says.
    pub plain: f64,
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
                    plain: if direct { idf * p.plain } else { 0.0 },
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
                    plain: if direct { idf * p.plain } else { 0.0 },
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
        for &(id, idf) in self.name_terms(doc) {
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
            for (r, w) in query
                .requests
                .iter()
                .enumerate()
                .take(query.request_count())
            {
                let share = if w.idf_total > 0.0 {
                    (g.matched[r] / w.idf_total).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                if share > best {
                    (best, best_r) = (share, r);
                }
            }
            if query.any_weight {
                coverage = coord_power(best.max(0.0), self.params.coord);
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
            None => query.actions,
        };
        let conflict =
            asked != 0 && self.name_actions[doc] != 0 && asked & self.name_actions[doc] == 0;
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
            plain: self.params.plain_bm25 * g.plain,
            floor: self.params.rare_floor * g.floor,
        }
    }

    /// Rank every entry for `intent`. Ties keep catalog order.
    pub fn rank(&self, intent: &str, prior: Option<&HistoryPrior>) -> Ranking {
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut scratch) => self.rank_with(intent, prior, &mut scratch),
            // Re-entered on this thread (never today): work in fresh buffers.
            Err(_) => self.rank_with(intent, prior, &mut Scratch::default()),
        })
    }

    fn rank_with(&self, intent: &str, prior: Option<&HistoryPrior>, s: &mut Scratch) -> Ranking {
        let (query, requests) = self.query(intent);
        let n = self.len();
        let nr = query.request_count();
        s.reset(n, nr);
        for i in 0..query.terms.len() {
            let mask = if query.per_request { query.masks[i] } else { 1 };
            let rare = self.is_rare(query.idf[i]);
            if query.related[i].is_empty() {
                // The word reaches nothing beyond itself: each entry comes once, so its match
                // is its best and goes straight in.
                let Some(id) = query.ids[i] else {
                    continue;
                };
                let idf = query.idf[i];
                for p in self.postings(id) {
                    let d = p.doc as usize;
                    let points = self.term_points(idf, p.combined);
                    let plain = idf * p.plain;
                    let a = &mut s.acc[d];
                    if !a.seen {
                        a.seen = true;
                        s.touched.push(p.doc);
                    }
                    a.words += points;
                    a.plain += plain;
                    if rare {
                        a.floor += plain;
                    }
                    for r in 0..nr {
                        if mask & (1 << r) != 0 {
                            s.matched[d * nr + r] += idf * p.covers;
                            s.points[d * nr + r] += points;
                        }
                    }
                }
                continue;
            }
            self.each_match(&query, i, |hit| {
                let a = &mut s.acc[hit.doc as usize];
                if a.term_points == 0.0 {
                    s.term_touched.push(hit.doc);
                }
                if hit.points > a.term_points {
                    a.term_points = hit.points;
                    a.term_idf = hit.matched_idf;
                }
                if hit.direct {
                    a.term_plain = hit.plain;
                }
            });
            for k in 0..s.term_touched.len() {
                let d = s.term_touched[k] as usize;
                let a = &mut s.acc[d];
                if !a.seen {
                    a.seen = true;
                    s.touched.push(d as u32);
                }
                a.words += a.term_points;
                a.plain += a.term_plain;
                if rare {
                    a.floor += a.term_plain;
                }
                for r in 0..nr {
                    if mask & (1 << r) != 0 {
                        s.matched[d * nr + r] += a.term_idf;
                        s.points[d * nr + r] += a.term_points;
                    }
                }
                a.term_points = 0.0;
                a.term_idf = 0.0;
                a.term_plain = 0.0;
            }
            s.term_touched.clear();
        }
        for &key in &query.pair_keys {
            for &d in self.pair_docs(key) {
                let a = &mut s.acc[d as usize];
                a.pair_hits = a.pair_hits.saturating_add(1);
            }
        }
        let mut best_lexical = 0.0f64;
        for &d in &s.touched {
            let d = d as usize;
            let g = Gathered {
                words: s.acc[d].words,
                plain: s.acc[d].plain,
                matched: &s.matched[d * nr..(d + 1) * nr],
                floor: s.acc[d].floor,
            };
            let parts = self.lexical_parts(d, &g, usize::from(s.acc[d].pair_hits), &query);
            let a = &mut s.acc[d];
            a.lexical = parts.total();
            best_lexical = best_lexical.max(a.lexical);
        }
        let boosts = prior_boosts(&query, prior).unwrap_or_default();
        let prior_of = |i: usize| {
            boosts
                .get(self.name(i))
                .map_or(0.0, |b| b.strength * PRIOR_STRENGTH * best_lexical.max(1.0))
        };
        // Entries with a score sort; the rest keep catalog order between the positive and
        // the negative ones (a sort by score with ties in catalog order, without sorting
        // what no word reached).
        s.keys.clear();
        if boosts.is_empty() {
            for &d in &s.touched {
                let score = s.acc[d as usize].lexical;
                if score != 0.0 {
                    s.keys.push((order_key(score, d), score));
                }
            }
        } else {
            for i in 0..n {
                let score = s.acc[i].lexical + prior_of(i);
                if score != 0.0 {
                    s.keys.push((order_key(score, i as u32), score));
                }
            }
        }
        s.keys.sort_unstable_by_key(|k| k.0);
        let acc = &s.acc;
        let scored = |i: usize| {
            let prior = if boosts.is_empty() { 0.0 } else { prior_of(i) };
            Scored {
                index: i,
                score: acc[i].lexical + prior,
                lexical: acc[i].lexical,
                prior,
                attachment: 0.0,
                best_for_request: None,
                semantic: 0.0,
            }
        };
        let entry = |k: &(u128, f64)| k.0 as u32 as usize;
        let positive = s.keys.partition_point(|k| k.1 > 0.0);
        let mut order: Vec<Scored> = Vec::with_capacity(n);
        order.extend(s.keys[..positive].iter().map(|k| scored(entry(k))));
        if s.keys.len() < n {
            let mut nonzero = vec![false; n];
            s.keys.iter().for_each(|k| nonzero[entry(k)] = true);
            order.extend((0..n).filter(|&i| !nonzero[i]).map(scored));
        }
        order.extend(s.keys[positive..].iter().map(|k| scored(entry(k))));
        if query.per_request && self.params.diversify > 0 {
            self.diversify(&mut order, &query, &s.points, &s.matched);
        }
        let confidence = confidence(&order, |d| {
            best_share(
                &Gathered {
                    words: 0.0,
                    plain: 0.0,
                    matched: &s.matched[d * nr..(d + 1) * nr],
                    floor: 0.0,
                },
                &query,
            )
        });
        Ranking {
            terms: query.terms,
            requests,
            pairs: query.pairs,
            term_requests: query.masks,
            order,
            confidence,
            semantic_scale: None,
        }
    }

    /// Each request's best entries first: for `diversify` rounds, every request's next-best
    /// entry (by its points for that request's words times its coverage of that request,
    /// as the whole score takes them) goes ahead of everything not yet placed; within a
    /// round, by score. The rest keep score order.
    fn diversify(&self, order: &mut Vec<Scored>, query: &Query, points: &[f64], matched: &[f64]) {
        let nr = query.request_count();
        let coord = self.params.coord;
        let request_score = |d: usize, r: usize| {
            let total = query.requests[r].idf_total;
            let share = if total > 0.0 {
                (matched[d * nr + r] / total).clamp(0.0, 1.0)
            } else {
                0.0
            };
            points[d * nr + r] * coord_power(share, coord)
        };
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
                        let pa = request_score(a.index, r);
                        let pb = request_score(b.index, r);
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

/// `share^coord`, with the usual square root taken as one (a general power costs more than
/// the rest of an entry's score).
fn coord_power(share: f64, coord: f64) -> f64 {
    if coord == 0.5 {
        share.sqrt()
    } else {
        share.powf(coord)
    }
}

/// A key that sorts by score, highest first, then by entry index: the score's bits made
/// to order as unsigned integers, inverted, above the index.
pub(super) fn order_key(score: f64, index: u32) -> u128 {
    let bits = score.to_bits();
    // Positive floats order by their bits; negative ones in reverse. Flip so that an
    // unsigned comparison orders every float, then invert for highest first.
    let ordered = if bits >> 63 == 0 {
        bits | (1 << 63)
    } else {
        !bits
    };
    (u128::from(!ordered) << 32) | u128::from(index)
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
fn confidence(order: &[Scored], covered: impl Fn(usize) -> f64) -> Confidence {
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
    let coverage = covered(order[0].index).clamp(0.0, 1.0);
    Confidence {
        value: margin * coverage,
        margin,
        coverage,
    }
}

/// What ranking gathers per entry.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    words: f64,
    plain: f64,
    floor: f64,
    lexical: f64,
    /// The current query word's best match (reset after each word).
    term_points: f64,
    term_idf: f64,
    term_plain: f64,
    seen: bool,
    pair_hits: u16,
}

/// Buffers one ranking fills, kept per thread so that a query allocates nothing in
/// proportion to the catalog beyond its answer.
#[derive(Default)]
struct Scratch {
    acc: Vec<Acc>,
    /// Per entry and request: matched IDF and word points.
    matched: Vec<f64>,
    points: Vec<f64>,
    touched: Vec<u32>,
    term_touched: Vec<u32>,
    /// Sort key and score of every entry with a score.
    keys: Vec<(u128, f64)>,
}

impl Scratch {
    fn reset(&mut self, n: usize, nr: usize) {
        self.acc.clear();
        self.acc.resize(n, Acc::default());
        self.matched.clear();
        self.matched.resize(n * nr, 0.0);
        self.points.clear();
        self.points.resize(n * nr, 0.0);
        self.touched.clear();
        self.term_touched.clear();
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}
