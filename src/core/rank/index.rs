//! The inverted index over a catalog, built once per catalog (and history) and queried per
//! intent. Words are interned: postings, name words and word pairs are looked up by id, so a
//! query touches no string beyond its own words.

use std::collections::HashMap;

use super::actions::{ACTION_WORDS, action_of, actions_of};
use super::baseline::{BM25_B, BM25_K1};
use super::entry::entry_fields;
use super::prior::LearnedWords;
use super::thesaurus::same_thing_as;
use super::{
    AGENT_SUFFIXES, Field, MAX_RELATED_LEN, MIN_COMPOUND_TAIL, MIN_RELATED_LEN, NF, RankParams,
};
use crate::core::catalog::RoutingGuide;

/// One entry's occurrences of one word: what ranking reads for every entry a query word
/// reaches, kept small (24 bytes) because a query streams through every posting of its
/// words. The per-field counts, which only explaining reads, are kept beside it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Posting {
    /// Σ over fields of weight × tf / length norm (BM25F's combined term frequency), fixed
    /// once the catalog and the weights are known.
    pub combined: f64,
    /// Plain BM25's saturated term frequency over the whole entry (one field, k1 and b of
    /// the baseline), without the IDF: what the rare-word floor and the plain-BM25 share
    /// are measured in.
    pub plain: f64,
    pub doc: u32,
    /// Found only among example values ("e.g. New York"): the entry takes such a value,
    /// which does not say it does what was asked, so the match covers the intent at the
    /// examples field's weight (see [`RankIndex::covers`]).
    pub examples_only: bool,
}

/// An inverted index over a catalog, built once per catalog and queried per intent.
#[derive(Debug, Clone)]
pub struct RankIndex {
    names: Vec<String>,
    /// Word → id.
    ids: HashMap<String, u32>,
    /// Id → word.
    words: Vec<String>,
    /// By word id, in entry order.
    postings: Vec<Vec<Posting>>,
    /// By word id, beside `postings`: each posting's occurrences per field.
    tfs: Vec<Vec<[u16; NF]>>,
    /// What a match found only among example values covers (the examples field's weight,
    /// at most 1).
    examples_cover: f64,
    /// By word id.
    idf: Vec<f64>,
    pub(super) lens: Vec<[u32; NF]>,
    pub(super) avg_len: [f64; NF],
    /// Every entry's distinct name words (id, IDF), one after another: entry `d`'s are
    /// `name_terms[name_start[d]..name_start[d + 1]]` (one array, read in order).
    name_terms: Vec<(u32, f64)>,
    name_start: Vec<u32>,
    pub(super) max_name_idf: Vec<f64>,
    /// The kinds of action each entry's name names (bit per action kind).
    pub(super) name_actions: Vec<u8>,
    /// Adjacent word pair of a name or description → the entries saying it, in order.
    pair_postings: HashMap<u64, Vec<u32>>,
    /// Word ids sorted by word, for prefix look-ups.
    vocab: Vec<u32>,
    /// Known word → the indexed compounds that end with it (`distanc` → `geodistanc`).
    compounds: HashMap<u32, Vec<u32>>,
    /// Word → words the catalog itself relates to it (a description word and the name
    /// words of the entries that say it), with the strength of the relation, 0..1.
    mined: HashMap<u32, Vec<(u32, f64)>>,
    /// The highest IDF a word can have here (a word of one entry).
    pub(super) max_idf: f64,
    pub(super) params: RankParams,
    /// Per entry, the entries that feed one of its identifier inputs (lookup steps).
    pub(super) feeders: Vec<Vec<u32>>,
    /// Whether any entry has a feeder (most catalogs have none: nothing to place).
    pub(super) any_feeders: bool,
    /// Per entry, its family ([`super::family::NO_FAMILY`] for none; empty when
    /// [`RankParams::family`] is off), and how many families there are.
    pub(super) families: Vec<u32>,
    pub(super) family_count: usize,
}

pub(super) fn idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

pub(super) fn pair_key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// Mined relations per word at most: the strongest few.
const MINED_PER_WORD: usize = 3;
/// A mined related word must be said by at most this share of the entries: a word
/// everything says tells nothing apart.
const MINED_MAX_DF_SHARE: f64 = 0.05;
/// Words per entry the mining reads (names and descriptions are short; a generated one is not).
const MINED_WORDS_PER_FIELD: usize = 48;

impl RankIndex {
    pub fn new(guide: &RoutingGuide) -> RankIndex {
        RankIndex::build(guide, RankParams::default(), None)
    }

    /// An index with other weights, for measuring them (`examples/rank_sweep.rs`).
    pub fn with_params(guide: &RoutingGuide, params: RankParams) -> RankIndex {
        RankIndex::build(guide, params, None)
    }

    /// An index whose entries also carry the words of past intents their followed plans
    /// answered ([`LearnedWords`], mined from the history outside the core).
    pub fn build(
        guide: &RoutingGuide,
        params: RankParams,
        learned: Option<&LearnedWords>,
    ) -> RankIndex {
        let n = guide.entry_count();
        let names: Vec<String> = guide.entry_names().map(|(n, _)| n.to_string()).collect();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut words: Vec<String> = Vec::new();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut tf_lists: Vec<Vec<[u16; NF]>> = Vec::new();
        let mut intern = |w: &str, words: &mut Vec<String>, postings: &mut Vec<Vec<Posting>>| {
            if let Some(&id) = ids.get(w) {
                return id;
            }
            let id = words.len() as u32;
            ids.insert(w.to_string(), id);
            words.push(w.to_string());
            postings.push(Vec::new());
            id
        };
        let mut lens = Vec::with_capacity(n);
        let mut name_words: Vec<Vec<u32>> = Vec::with_capacity(n);
        let mut desc_words: Vec<Vec<u32>> = Vec::with_capacity(n);
        let mut name_actions = Vec::with_capacity(n);
        let mut pair_postings: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut totals = [0f64; NF];
        for (i, name) in names.iter().enumerate() {
            let mut fields = entry_fields(guide, i);
            if let Some(l) = learned.and_then(|l| l.words_for(name)) {
                fields[Field::Learned as usize].extend(l.iter().cloned());
            }
            let mut len = [0u32; NF];
            let mut tfs: HashMap<u32, [u16; NF]> = HashMap::new();
            let mut field_ids: [Vec<u32>; NF] = Default::default();
            for (fi, fw) in fields.iter().enumerate() {
                len[fi] = fw.len() as u32;
                totals[fi] += fw.len() as f64;
                for w in fw {
                    let id = intern(w, &mut words, &mut postings);
                    field_ids[fi].push(id);
                    let tf = tfs.entry(id).or_insert([0; NF]);
                    tf[fi] = tf[fi].saturating_add(1);
                }
            }
            let mut entry_postings: Vec<(u32, [u16; NF])> = tfs.into_iter().collect();
            entry_postings.sort_unstable_by_key(|(id, _)| *id);
            tf_lists.resize(postings.len(), Vec::new());
            for (id, tf) in entry_postings {
                postings[id as usize].push(Posting {
                    combined: 0.0,
                    plain: 0.0,
                    doc: i as u32,
                    examples_only: false,
                });
                tf_lists[id as usize].push(tf);
            }
            let mut entry_pairs: Vec<u64> = [Field::Name, Field::Description]
                .iter()
                .flat_map(|&f| {
                    field_ids[f as usize]
                        .windows(2)
                        .map(|w| pair_key(w[0], w[1]))
                })
                .collect();
            entry_pairs.sort_unstable();
            entry_pairs.dedup();
            for key in entry_pairs {
                pair_postings.entry(key).or_default().push(i as u32);
            }
            name_actions.push(actions_of(&fields[Field::Name as usize]));
            let mut nw = std::mem::take(&mut field_ids[Field::Name as usize]);
            nw.sort_unstable();
            nw.dedup();
            name_words.push(nw);
            let mut dw = std::mem::take(&mut field_ids[Field::Description as usize]);
            dw.truncate(MINED_WORDS_PER_FIELD);
            dw.sort_unstable();
            dw.dedup();
            desc_words.push(dw);
            lens.push(len);
        }
        let avg_len: [f64; NF] = std::array::from_fn(|f| {
            if n == 0 {
                1.0
            } else {
                (totals[f] / n as f64).max(1.0)
            }
        });
        let entry_len: Vec<f64> = lens
            .iter()
            .map(|l| l.iter().map(|&x| f64::from(x)).sum())
            .collect();
        let avg_entry_len = if n == 0 {
            1.0
        } else {
            (entry_len.iter().sum::<f64>() / n as f64).max(1.0)
        };
        // The combined frequency of every posting, now that lengths are known.
        let examples = Field::Examples as usize;
        let examples_cover = params.fields[examples].0.min(1.0);
        for (list, tfs) in postings.iter_mut().zip(&tf_lists) {
            for (p, tf) in list.iter_mut().zip(tfs) {
                let len = &lens[p.doc as usize];
                p.combined = (0..NF)
                    .filter(|&f| tf[f] > 0)
                    .map(|f| {
                        let (w, b) = params.fields[f];
                        let norm = 1.0 - b + b * f64::from(len[f]) / avg_len[f];
                        w * f64::from(tf[f]) / norm
                    })
                    .sum();
                let total: f64 = tf.iter().map(|&t| f64::from(t)).sum();
                let norm = 1.0 - BM25_B + BM25_B * entry_len[p.doc as usize] / avg_entry_len;
                p.plain = total * (BM25_K1 + 1.0) / (total + BM25_K1 * norm);
                p.examples_only = (0..NF).all(|f| tf[f] == 0 || f == examples);
            }
        }
        let idfs: Vec<f64> = postings.iter().map(|l| idf(n, l.len())).collect();
        let mut name_terms: Vec<(u32, f64)> = Vec::new();
        let mut name_start: Vec<u32> = Vec::with_capacity(n + 1);
        let mut max_name_idf = Vec::with_capacity(n);
        for ws in &name_words {
            name_start.push(name_terms.len() as u32);
            name_terms.extend(ws.iter().map(|&id| (id, idfs[id as usize])));
            max_name_idf.push(ws.iter().map(|&id| idfs[id as usize]).fold(0.0, f64::max));
        }
        name_start.push(name_terms.len() as u32);
        let mut vocab: Vec<u32> = (0..words.len() as u32).collect();
        vocab.sort_unstable_by(|&a, &b| words[a as usize].cmp(&words[b as usize]));
        let mut index = RankIndex {
            names,
            ids,
            words,
            postings,
            tfs: tf_lists,
            examples_cover,
            idf: idfs,
            lens,
            avg_len,
            name_terms,
            name_start,
            max_name_idf,
            name_actions,
            pair_postings,
            vocab,
            compounds: HashMap::new(),
            mined: HashMap::new(),
            max_idf: idf(n, 1),
            params,
            feeders: Vec::new(),
            any_feeders: false,
            families: Vec::new(),
            family_count: 0,
        };
        if params.family > 0.0 {
            (index.families, index.family_count) =
                super::family::family_ids(index.names.iter().map(String::as_str));
        }
        if params.lookups > 0 {
            index.feeders = super::lookups::feeders(guide);
            index.any_feeders = index.feeders.iter().any(|f| !f.is_empty());
        }
        index.compounds = index.compounds_of();
        if params.mined > 0.0 {
            index.mined = index.mine_relations(&name_words, &desc_words, params.mined_min_count);
        }
        index
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every entry's name, in catalog order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    pub fn name(&self, index: usize) -> &str {
        &self.names[index]
    }

    pub fn params(&self) -> &RankParams {
        &self.params
    }

    /// An entry's distinct name words with their IDF.
    pub(super) fn name_terms(&self, doc: usize) -> &[(u32, f64)] {
        &self.name_terms[self.name_start[doc] as usize..self.name_start[doc + 1] as usize]
    }

    pub(super) fn id(&self, word: &str) -> Option<u32> {
        self.ids.get(word).copied()
    }

    pub(super) fn word(&self, id: u32) -> &str {
        &self.words[id as usize]
    }

    /// How many distinct words the index holds (word ids are below this).
    pub(super) fn vocab_len(&self) -> usize {
        self.words.len()
    }

    pub(super) fn postings(&self, id: u32) -> &[Posting] {
        &self.postings[id as usize]
    }

    /// One entry's posting of a word (postings are in entry order).
    pub(super) fn posting(&self, id: u32, doc: usize) -> Option<&Posting> {
        let list = &self.postings[id as usize];
        list.binary_search_by_key(&(doc as u32), |p| p.doc)
            .ok()
            .map(|k| &list[k])
    }

    /// How much a match counts towards covering the intent (see [`Posting::examples_only`]).
    pub(super) fn covers(&self, p: &Posting) -> f64 {
        if p.examples_only {
            self.examples_cover
        } else {
            1.0
        }
    }

    pub(super) fn word_idf(&self, id: u32) -> f64 {
        self.idf[id as usize]
    }

    /// The IDF of a word, known or not (an unknown word is as rare as can be).
    pub(super) fn idf_of(&self, word: &str) -> f64 {
        self.id(word)
            .map_or_else(|| idf(self.len(), 0), |id| self.word_idf(id))
    }

    pub(super) fn pair_docs(&self, key: u64) -> &[u32] {
        self.pair_postings.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Per-field BM25F pieces of entry `doc`'s posting of word `id`: the weighted,
    /// length-normalised term frequency in each field (they add up to its `combined`).
    pub(super) fn field_tf(&self, id: u32, doc: usize) -> Option<[f64; NF]> {
        let list = &self.postings[id as usize];
        let k = list.binary_search_by_key(&(doc as u32), |p| p.doc).ok()?;
        let tf = &self.tfs[id as usize][k];
        let len = &self.lens[doc];
        Some(std::array::from_fn(|f| {
            if tf[f] == 0 {
                return 0.0;
            }
            let (w, b) = self.params.fields[f];
            let norm = 1.0 - b + b * f64::from(len[f]) / self.avg_len[f];
            w * f64::from(tf[f]) / norm
        }))
    }

    pub(super) fn term_points(&self, idf: f64, combined: f64) -> f64 {
        let k1 = self.params.k1;
        idf * combined * (k1 + 1.0) / (combined + k1)
    }

    /// Indexed words that are a head glued to another indexed word (`geodistanc` = `geo` +
    /// `distanc`), keyed by that tail.
    fn compounds_of(&self) -> HashMap<u32, Vec<u32>> {
        let mut out: HashMap<u32, Vec<u32>> = HashMap::new();
        for &id in &self.vocab {
            let word = self.word(id);
            if !word.is_ascii() || word.len() > MAX_RELATED_LEN {
                continue;
            }
            for cut in 3..=word.len().saturating_sub(MIN_COMPOUND_TAIL) {
                if let Some(tail) = self.id(&word[cut..]) {
                    out.entry(tail).or_default().push(id);
                    break;
                }
            }
        }
        out
    }

    /// Related words the catalog itself teaches: entries name themselves with some words and
    /// describe themselves with others, so a description word says the same as the name
    /// words it keeps company with (`biography` → `overview` when artist-overview tools are
    /// described as biographies), and a name word says the same as its description words.
    /// The strength is the cosine of the two words' entry sets, over entries that say both.
    fn mine_relations(
        &self,
        name_words: &[Vec<u32>],
        desc_words: &[Vec<u32>],
        min_count: usize,
    ) -> HashMap<u32, Vec<(u32, f64)>> {
        let n = self.len();
        let max_df = ((n as f64 * MINED_MAX_DF_SHARE).ceil() as usize).max(min_count);
        let mut together: HashMap<u64, u32> = HashMap::new();
        let mut name_df: HashMap<u32, u32> = HashMap::new();
        let mut desc_df: HashMap<u32, u32> = HashMap::new();
        for (nw, dw) in name_words.iter().zip(desc_words) {
            let nw = &nw[..nw.len().min(MINED_WORDS_PER_FIELD)];
            nw.iter().for_each(|&a| *name_df.entry(a).or_default() += 1);
            dw.iter().for_each(|&b| *desc_df.entry(b).or_default() += 1);
            for &a in nw {
                for &b in dw.iter().filter(|&&b| b != a) {
                    *together.entry(pair_key(a, b)).or_default() += 1;
                }
            }
        }
        let mut out: HashMap<u32, Vec<(u32, f64)>> = HashMap::new();
        for (key, count) in together {
            let count = count as usize;
            if count < min_count {
                continue;
            }
            let (a, b) = ((key >> 32) as u32, key as u32);
            let (da, db) = (name_df[&a] as f64, desc_df[&b] as f64);
            let strength = count as f64 / (da * db).sqrt();
            // A word reaches the other only if the other tells entries apart.
            if self.postings[b as usize].len() <= max_df {
                out.entry(a).or_default().push((b, strength));
            }
            if self.postings[a as usize].len() <= max_df {
                out.entry(b).or_default().push((a, strength));
            }
        }
        for list in out.values_mut() {
            list.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
            list.truncate(MINED_PER_WORD);
        }
        out
    }

    /// Vocabulary words a query word reaches beyond itself, with the share of a match each
    /// is worth: another word for the same kind of action (`find` → `get`), the longer words
    /// it begins (`contrib` → `contribution`), the shorter words it begins with
    /// (`contribution` → `contrib`), the compounds it ends (`distanc` → `geodistanc`), and
    /// the words the catalog relates to it.
    pub(super) fn related(&self, term: &str, out: &mut Vec<(u32, f64)>) {
        self.action_synonyms(term, out);
        let t = self.params.thesaurus;
        if t > 0.0 {
            out.extend(
                same_thing_as(term)
                    .iter()
                    .filter_map(|w| self.id(w))
                    .map(|id| (id, t)),
            );
        }
        let r = self.params.related;
        let fits = term.is_ascii() && term.len() >= 3 && term.len() <= MAX_RELATED_LEN;
        if r > 0.0 && fits {
            if term.len() < MIN_RELATED_LEN {
                // A short word reaches only the one who does it: `law` → `lawyer`, `win` → `winner`.
                let doubled = term.chars().last().map(|c| format!("{term}{c}"));
                for base in std::iter::once(term.to_string()).chain(doubled) {
                    for suffix in AGENT_SUFFIXES {
                        if let Some(id) = self.id(&format!("{base}{suffix}")) {
                            out.push((id, r));
                        }
                    }
                }
            } else {
                let start = self.vocab.partition_point(|&v| self.word(v) < term);
                out.extend(
                    self.vocab[start..]
                        .iter()
                        .take_while(|&&v| self.word(v).starts_with(term))
                        .filter(|&&v| self.word(v).len() >= term.len() + 2)
                        .map(|&v| (v, r)),
                );
                for k in MIN_RELATED_LEN..term.len().saturating_sub(1) {
                    if let Some(id) = self.id(&term[..k]) {
                        out.push((id, r));
                    }
                }
                if let Some(compounds) = self.id(term).and_then(|id| self.compounds.get(&id)) {
                    out.extend(compounds.iter().map(|&v| (v, r)));
                }
            }
        }
        let m = self.params.mined;
        if m > 0.0
            && let Some(list) = self.id(term).and_then(|id| self.mined.get(&id))
        {
            out.extend(list.iter().map(|&(v, s)| (v, m * s)));
        }
        // One share per word: the best way to reach it.
        out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        out.dedup_by_key(|x| x.0);
        if let Some(id) = self.id(term) {
            out.retain(|x| x.0 != id);
        }
    }

    /// Indexed words for the same kind of action as `term` (`find` → `get`, `search`, `list`),
    /// each worth `action_synonym` of a match: "find the driving distance" is what
    /// `get_driving_distance` does.
    fn action_synonyms(&self, term: &str, out: &mut Vec<(u32, f64)>) {
        let share = self.params.action_synonym;
        let Some(kind) = action_of(term).filter(|_| share > 0.0) else {
            return;
        };
        out.extend(
            ACTION_WORDS
                .iter()
                .filter(|&&(w, k)| k == kind && w != term)
                .filter_map(|&(w, _)| self.id(w))
                .map(|id| (id, share)),
        );
    }
}
