//! A naive ranking kept for tests: every entry scored on its own through the explaining
//! path (each query word's best match looked up per entry), every entry sorted, and the
//! request winners placed by scanning the whole order. `rank` must give exactly this order
//! and these scores, however it gets there.

use super::index::RankIndex;
use super::prior::HistoryPrior;
use super::score::{Gathered, coord_power, prior_boosts};
use super::{PRIOR_STRENGTH, Scored};

impl RankIndex {
    /// The full order `rank` must give, computed the slow, obvious way.
    pub(crate) fn rank_reference(&self, intent: &str, prior: Option<&HistoryPrior>) -> Vec<Scored> {
        let (mut order, firsts) = self.order_reference(intent, prior);
        // Lookup steps are a placement of their own after this order, shared with `rank`;
        // the order holds every entry, so nothing is fetched from outside it.
        self.place_lookups_in(&mut order, firsts, |_| None);
        order
    }

    /// The order by score with the request winners first, and how many first-round
    /// winners lead it.
    fn order_reference(&self, intent: &str, prior: Option<&HistoryPrior>) -> (Vec<Scored>, usize) {
        let (query, _) = self.query(intent);
        let n = self.len();
        let nr = query.request_count();
        let mut lexical = vec![0.0; n];
        let mut points = vec![0.0; n * nr];
        let mut matched = vec![0.0; n * nr];
        for (d, lex) in lexical.iter_mut().enumerate() {
            let (mut words, mut plain, mut floor, mut any) = (0.0, 0.0, 0.0, false);
            for i in 0..query.terms.len() {
                let Some(hit) = self.best_match(&query, i, d) else {
                    continue;
                };
                any = true;
                words += hit.points;
                let own = query.ids[i]
                    .and_then(|id| self.posting(id, d))
                    .map_or(0.0, |p| query.idf[i] * p.plain);
                plain += own;
                if self.is_rare(query.idf[i]) {
                    floor += own;
                }
                let mask = if query.per_request { query.masks[i] } else { 1 };
                for r in 0..nr {
                    if mask & (1 << r) != 0 {
                        matched[d * nr + r] += hit.matched_idf;
                        points[d * nr + r] += hit.points;
                    }
                }
            }
            if !any {
                continue;
            }
            let pair_hits = query
                .pair_keys
                .iter()
                .filter(|&&k| self.pair_docs(k).binary_search(&(d as u32)).is_ok())
                .count();
            let g = Gathered {
                words,
                plain,
                matched: &matched[d * nr..(d + 1) * nr],
                floor,
            };
            *lex = self
                .lexical_parts(d, &g, pair_hits, &query, |id| query.reach(id))
                .total();
        }
        let best_lexical = lexical.iter().copied().fold(0.0, f64::max);
        let mut family = vec![(0.0, None); n];
        if self.family_count > 0 {
            let entries: Vec<(u32, f64)> = (0..n).map(|d| (d as u32, lexical[d])).collect();
            let mut bests = vec![super::family::FamilyBest::default(); self.family_count];
            super::family::lend_family_points(
                &self.families,
                &entries,
                self.params.family,
                &mut bests,
                |d, p, from| family[d as usize] = (p, Some(from as usize)),
            );
        }
        let boosts = prior_boosts(&query, prior).unwrap_or_default();
        let mut order: Vec<Scored> = (0..n)
            .map(|i| {
                let prior = boosts
                    .get(self.name(i))
                    .map_or(0.0, |b| b.strength * PRIOR_STRENGTH * best_lexical.max(1.0));
                Scored {
                    index: i,
                    score: lexical[i] + family[i].0 + prior,
                    lexical: lexical[i],
                    prior,
                    attachment: 0.0,
                    best_for_request: None,
                    lookup_for: None,
                    semantic: 0.0,
                    family: family[i].0,
                    family_from: family[i].1,
                }
            })
            .collect();
        // -0.0 and 0.0 are one score.
        order.sort_by(|a, b| {
            (b.score + 0.0)
                .total_cmp(&(a.score + 0.0))
                .then(a.index.cmp(&b.index))
        });
        if !(query.per_request && self.params.diversify > 0) {
            return (order, 0);
        }
        let request_score = |d: usize, r: usize| {
            let total = query.requests[r].idf_total;
            let share = if total > 0.0 {
                (matched[d * nr + r] / total).clamp(0.0, 1.0)
            } else {
                0.0
            };
            points[d * nr + r] * coord_power(share, self.params.coord)
        };
        let live = order.partition_point(|s| s.score > 0.0);
        if live == 0 {
            return (order, 0);
        }
        let mut placed = vec![false; n];
        let mut head: Vec<Scored> = Vec::new();
        let mut firsts = 0;
        let mut first_score = vec![f64::NEG_INFINITY; nr];
        for round_no in 0..self.params.diversify {
            let mut round: Vec<(usize, usize)> = Vec::new();
            for r in 0..nr {
                let best = order[..live]
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !placed[*k])
                    .filter(|(_, s)| points[s.index * nr + r] > 0.0)
                    .max_by(|(ka, a), (kb, b)| {
                        request_score(a.index, r)
                            .total_cmp(&request_score(b.index, r))
                            .then(a.score.total_cmp(&b.score))
                            .then(kb.cmp(ka))
                    })
                    .map(|(k, _)| k);
                if let Some(k) = best
                    && !round.iter().any(|&(kk, _)| kk == k)
                {
                    let rs = request_score(order[k].index, r);
                    if round_no == 0 {
                        first_score[r] = rs;
                    } else if rs < self.params.second_share * first_score[r] {
                        continue;
                    }
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
            if round_no == 0 {
                firsts = head.len();
            }
        }
        let rest: Vec<Scored> = (0..n).filter(|&k| !placed[k]).map(|k| order[k]).collect();
        let top_rest = rest.first().map_or(f64::NEG_INFINITY, |s| s.score);
        let scores: Vec<f64> = head.iter().map(|s| s.score).collect();
        for (s, ahead) in head
            .iter_mut()
            .zip(super::placed_ahead_of_higher(&scores, top_rest))
        {
            if !ahead {
                s.best_for_request = None;
            }
        }
        head.extend(rest);
        (head, firsts)
    }
}
