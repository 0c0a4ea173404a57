//! Ranking: every entry's lexical score for an intent, the history prior, and the order —
//! each request's best entry first when a question asks for several things.

use super::family::{FamilyBest, lend_family_points};
use std::cell::RefCell;
use std::collections::HashMap;

use super::index::RankIndex;
use super::prior::{Boost, HistoryPrior};
use super::query::Query;
use super::{Confidence, PRIOR_STRENGTH, Placement, Ranking, Scored};

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
                    matched_idf: weight * idf * self.covers(p),
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
                    matched_idf: weight * idf * self.covers(p),
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

    /// Name coverage: the IDF share of the entry's name words that the intent reaches
    /// (`reach`: the share of a match a word is reached at, 0 when it is not).
    fn name_coverage(&self, doc: usize, reach: impl Fn(u32) -> f64) -> f64 {
        let mut hit = 0.0;
        let mut total = 0.0;
        for &(id, idf) in self.name_terms(doc) {
            hit += reach(id) * idf;
            total += idf;
        }
        if total == 0.0 { 0.0 } else { hit / total }
    }

    /// An entry's lexical score from what it gathered, put together the one way both
    /// ranking and explaining use (`reach` is [`Query::reach`], or a faster look-up of it).
    pub(super) fn lexical_parts(
        &self,
        doc: usize,
        g: &Gathered,
        pair_hits: usize,
        query: &Query,
        reach: impl Fn(u32) -> f64,
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
        let cov = self.name_coverage(doc, reach);
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

    /// Rank every entry for `intent`, best first. Ties keep catalog order.
    pub fn rank(&self, intent: &str, prior: Option<&HistoryPrior>) -> Ranking {
        with_scratch(|s| self.rank_with(intent, prior, None, self.len(), s))
    }

    /// As [`RankIndex::rank`], with the semantic layer: each entry gains `weight × max(best
    /// lexical score, 1) × its best similarity over the requests` (in `Scored::semantic`),
    /// and each request's winners are chosen by their points for that request plus the same
    /// share of their similarity to that request — so a request the words miss still gets
    /// its nearest entry near the top. `similarity` holds one row per request of the
    /// question (as [`split_requests`](super::split_requests) reads it), each with one value
    /// per entry; rows of another count than the ranker's requests are read as one row, each
    /// entry's best. Only entries the request's words reach compete for its places: the
    /// similarity reorders them (measured on the tune halves: letting every entry compete
    /// was 0.001–0.002 lower on recall@5).
    pub fn rank_semantic(
        &self,
        intent: &str,
        prior: Option<&HistoryPrior>,
        similarity: &[Vec<f64>],
        weight: f64,
    ) -> Ranking {
        let semantic = SemanticInput { similarity, weight };
        with_scratch(|s| self.rank_with(intent, prior, Some(&semantic), self.len(), s))
    }

    /// The first `k` entries of [`RankIndex::rank`]'s order, exactly as it places them
    /// (request winners first, then by score), without sorting the rest: for callers that
    /// show the top and explain it, never for a cut order or a rank of every entry.
    /// Terms, requests and confidence are those of the full ranking.
    pub fn rank_top(&self, intent: &str, prior: Option<&HistoryPrior>, k: usize) -> Ranking {
        with_scratch(|s| {
            // Confidence reads the first two places.
            let mut r = self.rank_with(intent, prior, None, k.max(2), s);
            r.order.truncate(k);
            r.head.truncate(k);
            r
        })
    }

    /// Score every entry the query reaches into the scratch buffers, then order the first
    /// `limit` places.
    fn rank_with(
        &self,
        intent: &str,
        prior: Option<&HistoryPrior>,
        semantic: Option<&SemanticInput>,
        limit: usize,
        s: &mut Scratch,
    ) -> Ranking {
        let (query, requests) = self.query(intent);
        let n = self.len();
        let nr = query.request_count();
        s.begin(n, nr, self.vocab_len());
        for &(id, share) in &query.reached {
            s.reach[id as usize] = share;
        }
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
                    let row = d * nr;
                    for r in 0..nr {
                        if mask & (1 << r) != 0 {
                            s.matched[row + r] += idf * self.covers(p);
                            s.points[row + r] += points;
                        }
                    }
                }
                continue;
            }
            self.each_match(&query, i, |hit| {
                let t = &mut s.term[hit.doc as usize];
                if t.points == 0.0 {
                    s.term_touched.push(hit.doc);
                }
                if hit.points > t.points {
                    t.points = hit.points;
                    t.idf = hit.matched_idf;
                }
                if hit.direct {
                    t.plain = hit.plain;
                }
            });
            for k in 0..s.term_touched.len() {
                let d = s.term_touched[k] as usize;
                let t = std::mem::take(&mut s.term[d]);
                let a = &mut s.acc[d];
                if !a.seen {
                    a.seen = true;
                    s.touched.push(d as u32);
                }
                a.words += t.points;
                a.plain += t.plain;
                if rare {
                    a.floor += t.plain;
                }
                let row = d * nr;
                for r in 0..nr {
                    if mask & (1 << r) != 0 {
                        s.matched[row + r] += t.idf;
                        s.points[row + r] += t.points;
                    }
                }
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
        let reach = &s.reach;
        for &d in &s.touched {
            let d = d as usize;
            let a = &s.acc[d];
            let g = Gathered {
                words: a.words,
                plain: a.plain,
                matched: &s.matched[d * nr..(d + 1) * nr],
                floor: a.floor,
            };
            let parts = self.lexical_parts(d, &g, usize::from(a.pair_hits), &query, |id| {
                reach[id as usize]
            });
            let lexical = parts.total();
            s.lexical[d] = lexical;
            best_lexical = best_lexical.max(lexical);
        }
        if self.family_count > 0 {
            // Service-mates lend each other a share of their scores (see [`super::family`]).
            if s.family_bests.len() < self.family_count {
                s.family_bests
                    .resize(self.family_count, FamilyBest::default());
            }
            s.family_entries.clear();
            s.family_entries
                .extend(s.touched.iter().map(|&d| (d, s.lexical[d as usize])));
            let (points, from) = (&mut s.family, &mut s.family_from);
            lend_family_points(
                &self.families,
                &s.family_entries,
                self.params.family,
                &mut s.family_bests,
                |d, p, f| {
                    points[d as usize] = p;
                    from[d as usize] = f;
                },
            );
        }
        let boosts = prior_boosts(&query, prior).unwrap_or_default();
        let prior_of = |i: usize| {
            boosts
                .get(self.name(i))
                .map_or(0.0, |b| b.strength * PRIOR_STRENGTH * best_lexical.max(1.0))
        };
        // The similarities read against the requests, and the points a similarity of 1 earns.
        let semantic = semantic
            .filter(|x| x.weight > 0.0)
            .map(|x| (x.per_request(nr, n), x.weight * best_lexical.max(1.0)));
        let semantic_scale = semantic.as_ref().map(|&(_, scale)| scale);
        let semantic_of = |i: usize| {
            semantic
                .as_ref()
                .map_or(0.0, |(x, scale)| scale * x.best(i))
        };
        // Every entry with a score gets a sort key; the rest keep catalog order between the
        // positive and the negative ones (a sort by score with ties in catalog order).
        s.keys.clear();
        if boosts.is_empty() && semantic.is_none() {
            for &d in &s.touched {
                let score = s.lexical[d as usize] + s.family[d as usize];
                if score != 0.0 {
                    s.keys.push((order_key(score, d), score));
                    s.acc[d as usize].keyed = true;
                }
            }
        } else {
            // Entries the query never reached may carry a prior or a similarity: every one
            // is looked at, and every one is cleaned after.
            s.all_dirty = true;
            for i in 0..n {
                let score = s.lexical[i] + s.family[i] + prior_of(i) + semantic_of(i);
                if score != 0.0 {
                    s.keys.push((order_key(score, i as u32), score));
                    s.acc[i].keyed = true;
                }
            }
        }
        let keyed = s.keys.len();
        let head = if query.per_request && self.params.diversify > 0 {
            let near = |d: usize, r: usize| {
                semantic
                    .as_ref()
                    .map_or(0.0, |(x, scale)| scale * x.to_request(r, d))
            };
            self.request_winners(&query, s, near)
        } else {
            Vec::new()
        };
        let (acc, lexical, family, family_from) = (&s.acc, &s.lexical, &s.family, &s.family_from);
        let scored = |i: usize| {
            let prior = if boosts.is_empty() { 0.0 } else { prior_of(i) };
            let semantic = semantic_of(i);
            Scored {
                index: i,
                score: lexical[i] + family[i] + prior + semantic,
                lexical: lexical[i],
                prior,
                attachment: 0.0,
                best_for_request: None,
                semantic,
                lookup_for: None,
                family: family[i],
                family_from: (family[i] != 0.0).then_some(family_from[i] as usize),
            }
        };
        let entry = |k: &(u128, f64)| k.0 as u32 as usize;
        let limit = limit.min(n);
        let mut order: Vec<Scored> = Vec::with_capacity(limit);
        for w in &head {
            let mut e = scored(w.index);
            e.best_for_request = Some(w.request);
            order.push(e);
        }
        // The rest by score: only the places asked for are selected and sorted.
        let rest = &mut s.keys;
        if !head.is_empty() {
            rest.retain(|k| !acc[entry(k)].placed);
        }
        // The first score after the winners; an entry without a score stands between the
        // positive and the negative ones.
        let unscored = if keyed < n { Some(0.0) } else { None };
        let top_rest = match rest.iter().min_by_key(|k| k.0).map(|k| k.1) {
            Some(first) if first > 0.0 => first,
            first => unscored.or(first).unwrap_or(f64::NEG_INFINITY),
        };
        let need = limit.saturating_sub(order.len());
        if need < rest.len() {
            rest.select_nth_unstable_by_key(need, |k| k.0);
            rest.truncate(need);
        }
        rest.sort_unstable_by_key(|k| k.0);
        let positive = rest.partition_point(|k| k.1 > 0.0);
        order.extend(rest[..positive].iter().map(|k| scored(entry(k))));
        if keyed < n && order.len() < limit {
            let room = limit - order.len();
            order.extend((0..n).filter(|&i| !acc[i].keyed).take(room).map(scored));
        }
        order.extend(rest[positive..].iter().map(|k| scored(entry(k))));
        // Only a placement ahead of a higher score is worth marking: read over every winner,
        // before the order is cut to the places asked for, so `rank_top` marks as `rank` does.
        let placed = head.len().min(order.len());
        let scores: Vec<f64> = order[..placed].iter().map(|e| e.score).collect();
        for (e, ahead) in order
            .iter_mut()
            .zip(super::placed_ahead_of_higher(&scores, top_rest))
        {
            if !ahead {
                e.best_for_request = None;
            }
        }
        order.truncate(limit);
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
        // Lookup steps after the confidence, which reads the order by score.
        // A lookup the first request winners need goes before the seconds: the plan needs
        // it, where a second is only another candidate.
        let firsts = head.iter().take_while(|w| w.round == 0).count();
        self.place_lookups_in(&mut order, firsts, |i| Some(scored(i)));
        order.truncate(limit);
        s.finish(nr, &query.reached);
        Ranking {
            terms: query.terms,
            requests,
            pairs: query.pairs,
            term_requests: query.masks,
            term_sources: query.sources,
            order,
            head: head
                .iter()
                .map(|w| Placement {
                    round: w.round,
                    request: w.request,
                })
                .collect(),
            confidence,
            semantic_scale,
        }
    }

    /// Each request's best entries, to go first: for `diversify` rounds, every request's
    /// next-best entry (by its points for that request's words times its coverage of that
    /// request, as the whole score takes them, plus `near(entry, request)`: the semantic
    /// layer's points for its similarity to that request, 0 without the layer) goes ahead of
    /// everything not yet placed; within a round, by score. Only entries with a positive
    /// score and points for the request's words compete. Marks them placed in the scratch.
    fn request_winners(
        &self,
        query: &Query,
        s: &mut Scratch,
        near: impl Fn(usize, usize) -> f64,
    ) -> Vec<Winner> {
        let nr = query.request_count();
        let coord = self.params.coord;
        let (points, matched) = (&s.points, &s.matched);
        let request_score = |d: usize, r: usize| {
            let total = query.requests[r].idf_total;
            let share = if total > 0.0 {
                (matched[d * nr + r] / total).clamp(0.0, 1.0)
            } else {
                0.0
            };
            points[d * nr + r] * coord_power(share, coord) + near(d, r)
        };
        let mut head: Vec<Winner> = Vec::new();
        if !s.keys.iter().any(|k| k.1 > 0.0) {
            return head;
        }
        let mut first_score = vec![f64::NEG_INFINITY; nr];
        for round_no in 0..self.params.diversify {
            let mut round: Vec<(u128, usize, usize)> = Vec::new();
            for r in 0..nr {
                // The highest request score; ties to the higher score, then the earlier
                // entry (the lower sort key).
                let mut best: Option<(f64, f64, u128, usize)> = None;
                for &(key, score) in s.keys.iter() {
                    let d = key as u32 as usize;
                    if score <= 0.0 || s.acc[d].placed || points[d * nr + r] <= 0.0 {
                        continue;
                    }
                    let rs = request_score(d, r);
                    let better = best.is_none_or(|(brs, bscore, bkey, _)| {
                        rs.total_cmp(&brs)
                            .then(score.total_cmp(&bscore))
                            .then(bkey.cmp(&key))
                            .is_gt()
                    });
                    if better {
                        best = Some((rs, score, key, d));
                    }
                }
                if let Some((rs, _, key, d)) = best
                    && !round.iter().any(|&(_, dd, _)| dd == d)
                {
                    if round_no == 0 {
                        first_score[r] = rs;
                    } else if rs < self.params.second_share * first_score[r] {
                        continue;
                    }
                    round.push((key, d, r));
                }
            }
            round.sort_by_key(|&(key, _, _)| key);
            for (_, d, r) in round {
                s.acc[d].placed = true;
                head.push(Winner {
                    index: d,
                    request: r,
                    round: round_no,
                });
            }
        }
        head
    }
}

/// The semantic layer's input to one ranking (see [`RankIndex::rank_semantic`]).
struct SemanticInput<'a> {
    similarity: &'a [Vec<f64>],
    weight: f64,
}

/// Similarities read against the ranker's requests.
enum RequestSimilarity<'a> {
    /// One row per request.
    PerRequest(&'a [Vec<f64>]),
    /// Each entry's best over rows that do not line up with the ranker's requests.
    Best(Vec<f64>),
}

impl SemanticInput<'_> {
    fn per_request(&self, requests: usize, entries: usize) -> RequestSimilarity<'_> {
        if self.similarity.len() == requests && requests > 0 {
            return RequestSimilarity::PerRequest(self.similarity);
        }
        let best = (0..entries)
            .map(|d| {
                self.similarity
                    .iter()
                    .filter_map(|row| row.get(d).copied())
                    .fold(0.0, f64::max)
            })
            .collect();
        RequestSimilarity::Best(best)
    }
}

impl RequestSimilarity<'_> {
    /// Entry `d`'s similarity to request `r` (never below 0; 0 beyond the rows).
    fn to_request(&self, r: usize, d: usize) -> f64 {
        match self {
            RequestSimilarity::PerRequest(rows) => rows
                .get(r)
                .and_then(|row| row.get(d))
                .copied()
                .unwrap_or(0.0)
                .max(0.0),
            RequestSimilarity::Best(best) => best.get(d).copied().unwrap_or(0.0).max(0.0),
        }
    }

    /// Entry `d`'s best similarity over the requests (never below 0).
    fn best(&self, d: usize) -> f64 {
        match self {
            RequestSimilarity::PerRequest(rows) => rows
                .iter()
                .filter_map(|row| row.get(d).copied())
                .fold(0.0, f64::max),
            RequestSimilarity::Best(best) => best.get(d).copied().unwrap_or(0.0).max(0.0),
        }
    }
}

/// One request winner placed ahead of the rest.
struct Winner {
    index: usize,
    request: usize,
    round: usize,
}

/// Run `f` on this thread's scratch buffers.
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut scratch) => f(&mut scratch),
        // Re-entered on this thread (never today): work in fresh buffers.
        Err(_) => f(&mut Scratch::default()),
    })
}

/// `share^coord`, with the usual square root taken as one (a general power costs more than
/// the rest of an entry's score).
pub(super) fn coord_power(share: f64, coord: f64) -> f64 {
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

/// What ranking gathers per entry: what every posting a query walks adds to, kept small
/// (32 bytes) because a query streams through it once per word.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    words: f64,
    plain: f64,
    floor: f64,
    seen: bool,
    /// Has a sort key (a score other than 0).
    keyed: bool,
    /// Placed first as a request winner.
    placed: bool,
    pair_hits: u16,
}

/// One entry's best match of the current query word, for a word that reaches others (an
/// entry may come once through each).
#[derive(Debug, Clone, Copy, Default)]
struct TermBest {
    points: f64,
    idf: f64,
    plain: f64,
}

/// Buffers one ranking fills, kept per thread so that a query allocates nothing in
/// proportion to the catalog beyond its answer. Between queries every buffer is all zeros,
/// and a query cleans only what it touched, so no query pays for the whole catalog.
#[derive(Default)]
struct Scratch {
    acc: Vec<Acc>,
    /// By entry: the current word's best match (all zeros between words).
    term: Vec<TermBest>,
    /// By entry: the lexical score.
    lexical: Vec<f64>,
    /// By entry: the points its family lent it, and which entry lent them.
    family: Vec<f64>,
    family_from: Vec<u32>,
    /// By family: its best scores in this ranking (all default between rankings).
    family_bests: Vec<FamilyBest>,
    /// The touched entries with their lexical scores, for the family pass.
    family_entries: Vec<(u32, f64)>,
    /// Per entry and request: matched IDF and word points.
    matched: Vec<f64>,
    points: Vec<f64>,
    touched: Vec<u32>,
    term_touched: Vec<u32>,
    /// Sort key and score of every entry with a score.
    keys: Vec<(u128, f64)>,
    /// By word id: the share of a match the query reaches the word at (0: not reached).
    reach: Vec<f64>,
    /// Entries beyond the touched ones were written (the prior's).
    all_dirty: bool,
    /// A query began and did not finish (it panicked): clean everything.
    dirty: bool,
}

impl Scratch {
    fn begin(&mut self, n: usize, nr: usize, vocab: usize) {
        if self.dirty {
            *self = Scratch::default();
        }
        self.dirty = true;
        if self.acc.len() < n {
            self.acc.resize(n, Acc::default());
            self.term.resize(n, TermBest::default());
            self.lexical.resize(n, 0.0);
            self.family.resize(n, 0.0);
            self.family_from.resize(n, 0);
        }
        if self.matched.len() < n * nr {
            self.matched.resize(n * nr, 0.0);
            self.points.resize(n * nr, 0.0);
        }
        if self.reach.len() < vocab {
            self.reach.resize(vocab, 0.0);
        }
        self.touched.clear();
        self.term_touched.clear();
        self.keys.clear();
    }

    /// Back to all zeros: the entries touched (all of them after a prior), their rows, the
    /// words reached.
    fn finish(&mut self, nr: usize, reached: &[(u32, f64)]) {
        for &d in &self.touched {
            let d = d as usize;
            self.acc[d] = Acc::default();
            self.lexical[d] = 0.0;
            self.family[d] = 0.0;
            self.matched[d * nr..(d + 1) * nr].fill(0.0);
            self.points[d * nr..(d + 1) * nr].fill(0.0);
        }
        if self.all_dirty {
            self.acc.fill(Acc::default());
            self.all_dirty = false;
        }
        for &(id, _) in reached {
            self.reach[id as usize] = 0.0;
        }
        self.touched.clear();
        self.keys.clear();
        self.dirty = false;
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}
