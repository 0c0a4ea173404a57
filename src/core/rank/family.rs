//! Tools of one service are used together: "locate gyms in London and show me the reviews"
//! wants `LocalBusinessData` and then `LocalBusinessDataBusinessReviews`, not another
//! service's `Product_Reviews`. An entry that scored lends a share of its score to the other
//! entries of its family (the service its name opens with, [`super::lookups::family_of`])
//! that scored too, so among entries that score alike, the one beside the service that
//! answers the rest of the question goes first. (Only the score: a request's winner is still
//! chosen by its points for that request's words; lending there too lost 0.007 all@10 on
//! the tune halves.)

use std::collections::HashMap;

use super::lookups::{family_of, identifier_words};

/// No family: the entry's name opens with no service's name, or no other entry shares it.
pub(super) const NO_FAMILY: u32 = u32::MAX;

/// Per entry, its family's id ([`NO_FAMILY`] for none): families of two entries or more;
/// and how many families there are.
pub(super) fn family_ids<'n>(names: impl Iterator<Item = &'n str>) -> (Vec<u32>, usize) {
    let keys: Vec<Option<String>> = names
        .map(|name| family_of(name, &identifier_words(name)).map(str::to_string))
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for k in keys.iter().flatten() {
        *count.entry(k.as_str()).or_default() += 1;
    }
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let families = keys
        .iter()
        .map(|k| match k.as_deref() {
            Some(k) if count.get(k).is_some_and(|&c| c >= 2) => {
                let next = ids.len() as u32;
                *ids.entry(k).or_insert(next)
            }
            _ => NO_FAMILY,
        })
        .collect();
    (families, ids.len())
}

/// A family's two best scores in one ranking, and whose they are.
#[derive(Debug, Clone, Copy)]
pub(super) struct FamilyBest {
    best: (f64, u32),
    second: (f64, u32),
}

impl Default for FamilyBest {
    fn default() -> Self {
        FamilyBest {
            best: (0.0, u32::MAX),
            second: (0.0, u32::MAX),
        }
    }
}

impl FamilyBest {
    /// Ties go to the earlier entry, whatever order entries are offered in.
    fn offer(&mut self, score: f64, entry: u32) {
        let ahead = |of: (f64, u32)| score > of.0 || (score == of.0 && entry < of.1);
        if ahead(self.best) {
            self.second = self.best;
            self.best = (score, entry);
        } else if ahead(self.second) {
            self.second = (score, entry);
        }
    }

    /// The best score of the family's other entries, and whose it is.
    fn other_than(&self, entry: u32) -> (f64, u32) {
        if self.best.1 == entry {
            self.second
        } else {
            self.best
        }
    }
}

/// The points each scored entry of `entries` (entry, its lexical score) gets from its
/// family: `share` of the best score among its family's other scored entries, with that
/// entry; `lend(entry, points, from)` for each that gets any. `bests` is scratch of at least
/// the family count, all default on entry and left so.
pub(super) fn lend_family_points(
    families: &[u32],
    entries: &[(u32, f64)],
    share: f64,
    bests: &mut [FamilyBest],
    mut lend: impl FnMut(u32, f64, u32),
) {
    let family = |d: u32| families.get(d as usize).copied().unwrap_or(NO_FAMILY);
    for &(d, score) in entries {
        let f = family(d);
        if f != NO_FAMILY && score > 0.0 {
            bests[f as usize].offer(score, d);
        }
    }
    for &(d, score) in entries {
        let f = family(d);
        if f == NO_FAMILY || score <= 0.0 {
            continue;
        }
        let (other, from) = bests[f as usize].other_than(d);
        if other > 0.0 {
            lend(d, share * other, from);
        }
    }
    for &(d, _) in entries {
        let f = family(d);
        if f != NO_FAMILY {
            bests[f as usize] = FamilyBest::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_is_a_service_name_two_entries_open_with() {
        let (ids, count) = family_ids(
            [
                "LocalBusinessData",
                "LocalBusinessDataBusinessReviews",
                "Real-Time_Product_Search_Product_Reviews",
                "get_weather",
                "Get_Country_Details",
                "Spotify_Search",
            ]
            .into_iter(),
        );
        assert_eq!(ids[0], ids[1]);
        assert_eq!(count, 1);
        assert_ne!(ids[0], NO_FAMILY);
        // Alone in its family, with no service name, or opening with a verb: none.
        assert_eq!(&ids[2..], &[NO_FAMILY; 4]);
    }

    #[test]
    fn each_scored_entry_gets_a_share_of_its_best_sibling_and_only_that() {
        // 0, 1, 2 are one family, 3 another of one scored entry, 4 none.
        let families = [0, 0, 0, 1, NO_FAMILY, 1];
        let entries = [(0, 4.0), (1, 2.0), (2, 0.0), (3, 5.0), (4, 9.0)];
        let mut bests = vec![FamilyBest::default(); 2];
        let mut lent = Vec::new();
        lend_family_points(&families, &entries, 0.5, &mut bests, |d, p, from| {
            lent.push((d, p, from))
        });
        // The best lends to the others, the second to the best; an entry that did not
        // score gets nothing, nor one whose siblings did not score.
        assert_eq!(lent, vec![(0, 1.0, 1), (1, 2.0, 0)]);
        assert!(bests.iter().all(|b| b.best.0 == 0.0 && b.second.0 == 0.0));
    }
}
