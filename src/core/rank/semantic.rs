//! The semantic layer's vectors (issue 19 item 5): entry sentences, unit rows and cosines.
//! The ranking takes the similarities in [`super::RankIndex::rank_semantic`]: each entry's
//! score gains `weight × best lexical score × similarity`, where the similarity is the
//! entry's best cosine over the question's requests (one sentence vector per request, so a
//! tool that answers one request of three is not diluted by the other two), and each
//! request's winners are chosen with their similarity to that request. Pure: the vectors
//! come in from the services layer (the `embed` service), which runs the model.

use crate::core::catalog::RoutingGuide;

/// The share of the best lexical score a similarity of 1 is worth, chosen on the tune halves
/// with all-MiniLM-L6-v2 (`cargo run --release --features semantic-local --example
/// rank_sweep -- --semantic local:DIR`), never on the test halves. Mean tune recall@5 /
/// all@10 over the 21 sets, with each request's winners chosen with their similarity to
/// it: 0.9271 / 0.9224 without the layer; 0.9376 / 0.9334 at 0.1, 0.9438 / 0.9426 at 0.5,
/// 0.9455 / 0.9440 at 0.75, 0.9448 / 0.9468 at 1, 0.9463 / 0.9452 at 1.5, 0.9459 / 0.9421
/// at 2, 0.9437 / 0.9373 at 3 — 1 has the best sum. With lookup steps placed: 0.9443 /
/// 0.9471 at 0.75, 0.9435 / 0.9489 at 1, 0.9453 / 0.9473 at 1.5 — a tie in sum, so 1 stays. (Before, with the lexical winners kept
/// and one similarity per entry: 0.9395 / 0.9426 at 1, 0.9404 / 0.9446 at 1.5.)
pub const SEMANTIC_WEIGHT: f64 = 1.0;

/// At most this many bytes of an entry's text are embedded: a sentence model reads 256
/// tokens at most, and an endpoint is never sent a megabyte for one entry.
pub const MAX_SENTENCE_BYTES: usize = 2_000;

/// Unit vectors of one length, one row per catalog entry (catalog order).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryVectors {
    dims: usize,
    data: Vec<f32>,
}

impl EntryVectors {
    /// Rows of equal length; each is scaled to unit length (a zero row stays zero).
    /// `None` when the rows differ in length.
    pub fn new(rows: Vec<Vec<f32>>) -> Option<EntryVectors> {
        let dims = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != dims) {
            return None;
        }
        let mut data = Vec::with_capacity(dims * rows.len());
        for mut r in rows {
            unit(&mut r);
            data.extend_from_slice(&r);
        }
        Some(EntryVectors { dims, data })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dims).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dims..(i + 1) * self.dims]
    }

    /// Per request (one vector per request of the question), each entry's cosine with it;
    /// a vector of another length gives a row of zeros, so rows stay one per request.
    pub fn request_similarities(&self, requests: &[Vec<f32>]) -> Vec<Vec<f64>> {
        requests
            .iter()
            .map(|r| {
                if r.len() != self.dims {
                    return vec![0.0; self.len()];
                }
                let mut q = r.clone();
                unit(&mut q);
                (0..self.len())
                    .map(|i| f64::from(dot(self.row(i), &q)))
                    .collect()
            })
            .collect()
    }

    /// Each entry's best cosine over `requests` (one vector per request of the question;
    /// vectors of another length are skipped). With no usable request, all zeros.
    pub fn best_similarities(&self, requests: &[Vec<f32>]) -> Vec<f64> {
        let requests: Vec<Vec<f32>> = requests
            .iter()
            .filter(|r| r.len() == self.dims)
            .map(|r| {
                let mut r = r.clone();
                unit(&mut r);
                r
            })
            .collect();
        (0..self.len())
            .map(|i| {
                let row = self.row(i);
                requests
                    .iter()
                    .map(|q| f64::from(dot(row, q)))
                    .fold(None, |best: Option<f64>, s| {
                        Some(best.map_or(s, |b| b.max(s)))
                    })
                    .unwrap_or(0.0)
            })
            .collect()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Scale a vector to unit length (a zero or non-finite vector becomes zero). The length
/// is measured in f64: values near f32's limits (1e20) square past it.
pub fn unit(v: &mut [f32]) {
    let norm = length(v);
    if norm.is_finite() && norm > 0.0 {
        v.iter_mut()
            .for_each(|x| *x = (f64::from(*x) / norm) as f32);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

fn length(v: &[f32]) -> f64 {
    v.iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
}

/// Why a vector cannot stand for a sentence, or `None` when it can: every value a finite
/// f32 and a length to scale by. An embedder's answer of zeros, of values past f32
/// (1e39 read as infinity) or too small to measure (1e-50) would rank as no similarity
/// while the layer says it is on.
pub fn vector_problem(v: &[f32]) -> Option<&'static str> {
    if v.is_empty() {
        return Some("is empty");
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Some("holds a value that is not a finite 32-bit number");
    }
    let norm = length(v);
    if !(norm.is_finite() && norm > 0.0) {
        return Some("has no length (every value zero, or too small to measure)");
    }
    None
}

/// Cosine of two vectors of one length (0 when either is zero or they differ in length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na > 0.0 && nb > 0.0 {
        f64::from(dot(a, b) / (na * nb))
    } else {
        0.0
    }
}

/// The sentence an entry is embedded as: its name read as words (`research.summarize` →
/// `research summarize`), its description, typical use and intent keywords, bounded by
/// [`MAX_SENTENCE_BYTES`].
pub fn entry_sentence(guide: &RoutingGuide, i: usize) -> String {
    let (names, description, typical_use, keywords): (Vec<&str>, &str, &str, &[String]) =
        if let Some(p) = guide.packs.get(i) {
            let m = &p.metadata;
            (
                vec![&p.name],
                &p.description,
                &m.typical_use,
                &m.intent_keywords,
            )
        } else if let Some(p) = guide.pipelines.get(i - guide.packs.len()) {
            let m = &p.metadata;
            let mut names = vec![p.id.as_str()];
            if p.name != p.id {
                names.push(&p.name);
            }
            (names, &p.description, &m.typical_use, &m.intent_keywords)
        } else {
            (Vec::new(), "", "", &[])
        };
    let mut parts: Vec<String> = names.iter().map(|n| name_words(n)).collect();
    parts.push(description.trim().to_string());
    parts.push(typical_use.trim().to_string());
    if !keywords.is_empty() {
        parts.push(keywords.join(", "));
    }
    parts.retain(|p| !p.is_empty());
    let mut s = parts.join(". ");
    if s.len() > MAX_SENTENCE_BYTES {
        let mut end = MAX_SENTENCE_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// An identifier as words: separators become spaces and camelCase splits.
fn name_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            out.extend(c.to_lowercase());
        } else {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            prev_lower = false;
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rank::RankIndex;

    fn guide() -> RoutingGuide {
        serde_json::from_str(crate::sample::SAMPLE_CATALOG).unwrap()
    }

    #[test]
    fn a_vector_is_its_own_nearest_and_rows_are_unit_length() {
        let v = EntryVectors::new(vec![vec![3.0, 4.0], vec![0.0, 2.0], vec![0.0, 0.0]]).unwrap();
        assert!((v.row(0)[0] - 0.6).abs() < 1e-6);
        let s = v.best_similarities(&[vec![6.0, 8.0]]);
        assert!((s[0] - 1.0).abs() < 1e-6, "{s:?}");
        assert!((s[1] - 0.8).abs() < 1e-6, "{s:?}");
        assert_eq!(s[2], 0.0);
        // The best request counts: the second row is (0, 1) exactly.
        let s = v.best_similarities(&[vec![1.0, 0.0], vec![0.0, 5.0]]);
        assert!((s[1] - 1.0).abs() < 1e-6, "{s:?}");
        assert!(EntryVectors::new(vec![vec![1.0], vec![1.0, 2.0]]).is_none());
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn names_read_as_words() {
        assert_eq!(name_words("research.summarize"), "research summarize");
        assert_eq!(
            name_words("Spotify_Scraper_getArtistOverview"),
            "spotify scraper get artist overview"
        );
    }

    #[test]
    fn the_semantic_part_lifts_an_entry_and_explains_itself() {
        let guide = guide();
        let index = RankIndex::new(&guide);
        let plain = index.rank("summarise the top results", None);
        let target = (0..index.len())
            .find(|&i| index.name(i) == "research.summarize")
            .unwrap();
        let before = plain.order.iter().position(|s| s.index == target).unwrap();
        assert!(before > 0, "already first without the layer");
        let mut sims = vec![0.1; index.len()];
        sims[target] = 0.9;
        let fused =
            index.rank_semantic("summarise the top results", None, &[sims], SEMANTIC_WEIGHT);
        let after = fused.order.iter().position(|s| s.index == target).unwrap();
        assert!(after < before, "{before} → {after}");
        let e = index.explain(&fused, target, None);
        let line = e.one_line();
        assert!(line.contains("semantic 0.90 ×"), "{line}");
        assert!(
            (e.total() - e.score).abs() < 1e-9,
            "{} vs {}",
            e.total(),
            e.score
        );
        // Off: nothing added, the explanation says nothing of it.
        let e = index.explain(&plain, target, None);
        assert!(!e.one_line().contains("semantic"), "{}", e.one_line());
    }

    /// Each request's winners are chosen with their similarity to that request, not only
    /// each entry's best similarity over the whole question: "top" makes a process list the
    /// lexical winner of "summarise the top results", and the request's own similarity puts
    /// the summariser there instead.
    #[test]
    fn a_request_winner_is_chosen_with_its_similarity_to_that_request() {
        let guide = guide();
        let index = RankIndex::new(&guide);
        let question = "summarise the top results. Then open the signup page in a browser";
        let lexical = index.rank(question, None);
        assert_eq!(lexical.requests.len(), 2, "{:?}", lexical.requests);
        let n = index.len();
        let at = |name: &str| (0..n).find(|&i| index.name(i) == name).unwrap();
        let (summarize, process_list, open) = (
            at("research.summarize"),
            at("cmd.process_list"),
            at("browser.open"),
        );
        // The first round's winner of a request (placed first whether or not its own score
        // already led, so read off the head rather than the marks).
        let winner_of = |r: &crate::core::rank::Ranking, request: usize| {
            r.head
                .iter()
                .zip(&r.order)
                .find(|(p, _)| p.round == 0 && p.request == request)
                .map(|(_, s)| s.index)
        };
        assert_eq!(
            winner_of(&lexical, 0),
            Some(process_list),
            "the lexical stage's miss this test is about"
        );
        let mut first = vec![0.1; n];
        first[summarize] = 0.8;
        let mut second = vec![0.1; n];
        second[open] = 0.8;
        let ranked = index.rank_semantic(question, None, &[first, second], SEMANTIC_WEIGHT);
        assert_eq!(winner_of(&ranked, 0), Some(summarize));
        let place = |i: usize| ranked.order.iter().position(|s| s.index == i).unwrap();
        assert!(
            place(summarize) < 2 && place(open) < 2,
            "{:?}",
            &ranked.order[..3]
        );
        for s in ranked.order.iter().take(10) {
            let e = index.explain(&ranked, s.index, None);
            assert!((e.total() - e.score).abs() < 1e-9, "{}", e.one_line());
        }
        // No similarity at all ranks as the lexical ranker does.
        let zero = index.rank_semantic(
            question,
            None,
            &[vec![0.0; n], vec![0.0; n]],
            SEMANTIC_WEIGHT,
        );
        let order =
            |r: &crate::core::rank::Ranking| r.order.iter().map(|s| s.index).collect::<Vec<_>>();
        assert_eq!(order(&zero)[..10], order(&lexical)[..10]);
    }
}
