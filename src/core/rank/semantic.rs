//! The semantic layer (issue 19 item 5), a stage after the lexical ranking: each entry's
//! score gains `weight × best lexical score × similarity`, where the similarity is the
//! entry's best cosine over the question's requests (one sentence vector per request, so a
//! tool that answers one request of three is not diluted by the other two). Pure: the
//! vectors come in from the services layer (the `embed` service), which runs the model.

use crate::core::catalog::RoutingGuide;

use super::{Ranking, Scored};

/// The share of the best lexical score a similarity of 1 is worth, chosen on the tune halves
/// with all-MiniLM-L6-v2 (`cargo run --release --features semantic-local --example
/// rank_sweep -- --semantic local:DIR`), never on the test halves: mean tune recall@5 /
/// all@10 over the 21 sets 0.9271 / 0.9224 without the layer; 0.9353 / 0.9251 at 0.1,
/// 0.9379 / 0.9338 at 0.5, 0.9395 / 0.9426 at 1, 0.9404 / 0.9446 at 1.5, 0.9402 / 0.9453 at
/// 2, 0.9412 / 0.9449 at 3 — 1.5 is the smallest weight on the plateau.
pub const SEMANTIC_WEIGHT: f64 = 1.5;

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

/// Scale a vector to unit length (a zero or non-finite vector becomes zero).
pub fn unit(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm.is_finite() && norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
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

/// The lexical ranking with the semantic part added: entry `i` gains `weight × max(best
/// lexical score, 1) × max(similarity[i], 0)` points (in `Scored::semantic`), and the
/// order is by the new score — except that the entries the lexical stage placed first as a
/// request's best (`best_for_request`) keep their places at the head, so every request
/// still has its answer near the top. Entries beyond `similarity` gain nothing.
pub fn fuse(mut ranking: Ranking, similarity: &[f64], weight: f64) -> Ranking {
    let best_lexical = ranking
        .order
        .iter()
        .map(|s| s.lexical)
        .fold(0.0, f64::max)
        .max(1.0);
    let scale = weight * best_lexical;
    ranking.semantic_scale = Some(scale);
    if weight <= 0.0 {
        return ranking;
    }
    for s in &mut ranking.order {
        let sim = similarity.get(s.index).copied().unwrap_or(0.0);
        s.semantic = scale * sim.max(0.0);
        s.score += s.semantic;
    }
    // The head the lexical stage placed: up to its last marked entry (an entry placed there
    // whose own score already led the rest carries no mark).
    let head = ranking
        .order
        .iter()
        .rposition(|s| s.best_for_request.is_some())
        .map_or(0, |k| k + 1);
    let rest: &mut [Scored] = &mut ranking.order[head..];
    rest.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    ranking
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
        let ranking = index.rank("summarise the top results", None);
        let target = (0..index.len())
            .find(|&i| index.name(i) == "research.summarize")
            .unwrap();
        let before = ranking
            .order
            .iter()
            .position(|s| s.index == target)
            .unwrap();
        assert!(before > 0, "already first without the layer");
        let mut sims = vec![0.1; index.len()];
        sims[target] = 0.9;
        let fused = fuse(ranking, &sims, SEMANTIC_WEIGHT);
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
        let plain = index.rank("summarise the top results", None);
        let e = index.explain(&plain, target, None);
        assert!(!e.one_line().contains("semantic"), "{}", e.one_line());
    }
}
