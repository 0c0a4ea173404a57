//! The semantic layer's services (issue 19 item 5): an [`Embedder`] turns texts into
//! sentence vectors — an OpenAI-compatible `/embeddings` endpoint ([`endpoint`]) or a
//! sentence-embedding model run in-process ([`local`], feature `semantic-local`) — and
//! [`Semantic`] holds a catalog's entry vectors (kept in the workspace's `cache.sqlite`,
//! keyed by embedder and text, so a catalog loaded again embeds nothing it embedded before)
//! and gives each entry its best similarity over a question's requests for
//! `core::rank::RankIndex::rank_semantic`.

use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use crate::core::catalog::RoutingGuide;
use crate::core::rank::{
    EntryVectors, MAX_REQUESTS, QUERY_MAX_BYTES, entry_sentence, split_requests, vector_problem,
};
use crate::exit::bad_input;
use crate::store::cache::{OutputCache, text_hash};

pub mod endpoint;
#[cfg(feature = "semantic-local")]
pub mod local;

/// Turns texts into sentence vectors, one per text, all of one length.
pub trait Embedder: Send + Sync {
    /// What made the vectors (model and where it runs): kept vectors are keyed by it, so
    /// another model never reads them.
    fn id(&self) -> &str;
    /// One vector per text, in order. An error names the embedder and what went wrong;
    /// nothing partial is returned.
    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>>;
    /// Whether `texts` may be sent to this embedder at all, asked before the first of them
    /// is: an endpoint refuses text holding another configured provider's key. An error
    /// says why (naming the key's variable, never the key).
    fn may_send(&self, _texts: &[String]) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Which embedder `--embedder` / `[rank] semantic` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SemanticSpec {
    /// A model directory with `model.safetensors`, `config.json` and `tokenizer.json`.
    Local(PathBuf),
    /// A model id, routed to a provider by the config's prefixes as chat models are; its
    /// `{base_url}/embeddings` is asked.
    Endpoint(String),
}

impl SemanticSpec {
    /// A relative model directory read from a file is the file's directory's business, not
    /// the directory a command happened to start in: joined to `base` (the workspace).
    pub fn relative_to(self, base: &Path) -> SemanticSpec {
        match self {
            SemanticSpec::Local(dir) if dir.is_relative() => SemanticSpec::Local(base.join(dir)),
            other => other,
        }
    }

    /// `local:DIR` or `endpoint:MODEL`; `origin` names where the text came from.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<SemanticSpec> {
        let text = text.trim();
        if let Some(dir) = text.strip_prefix("local:")
            && !dir.trim().is_empty()
        {
            return Ok(SemanticSpec::Local(PathBuf::from(dir.trim())));
        }
        if let Some(model) = text.strip_prefix("endpoint:")
            && !model.trim().is_empty()
        {
            let model = model.trim();
            // The one rule `--model` holds a model id to: the id is sent to the provider
            // (tester F8: one with ESC and a line break went out).
            if let Some(problem) = crate::core::budget::model_id_problem(model) {
                return Err(bad_input(format!(
                    "{origin}: the embedder's model id {} {problem}",
                    crate::core::terminal_text::quoted(model)
                )));
            }
            return Ok(SemanticSpec::Endpoint(model.to_string()));
        }
        Err(bad_input(format!(
            "{origin}: {} names no embedder: expected local:DIR (a sentence-embedding model directory) or endpoint:MODEL (a model id a provider serves /embeddings for)",
            crate::core::terminal_text::quoted(text)
        )))
    }
}

/// The embedder a spec names, ready to use. `config_origin` is named in errors about the
/// providers; a local model needs the `semantic-local` build.
pub fn open_embedder(
    spec: &SemanticSpec,
    config: &crate::core::config::Config,
    config_origin: &str,
) -> anyhow::Result<Box<dyn Embedder>> {
    match spec {
        SemanticSpec::Endpoint(model) => {
            let providers = crate::llm::provider::Providers::from_config(config, config_origin)?;
            let endpoint = providers.resolve(model)?;
            Ok(Box::new(endpoint::EndpointEmbedder::new(endpoint)?))
        }
        SemanticSpec::Local(dir) => open_local(dir),
    }
}

/// The embedder `text` names (`from` says where it was written: `--embedder`, or the config
/// file's `rank.semantic`, whose relative model directory is read from `base`), parsed and
/// opened; an error opening it names the layer, the
/// embedder and where it was asked for, since a command that calls no model would otherwise
/// report a provider's missing key with no word of why it was read.
pub fn open_named(
    text: &str,
    from: &str,
    base: Option<&Path>,
    config: &crate::core::config::Config,
    config_origin: &str,
) -> anyhow::Result<Box<dyn Embedder>> {
    let mut spec = SemanticSpec::parse(text, from)?;
    if let Some(base) = base {
        spec = spec.relative_to(base);
    }
    open_embedder(&spec, config, config_origin).map_err(|e| {
        e.context(format!(
            "the semantic layer's embedder {} ({from})",
            crate::core::terminal_text::plain_or_quoted(text.trim())
        ))
    })
}

#[cfg(feature = "semantic-local")]
fn open_local(dir: &Path) -> anyhow::Result<Box<dyn Embedder>> {
    Ok(Box::new(local::LocalEmbedder::open(dir)?))
}

#[cfg(not(feature = "semantic-local"))]
fn open_local(dir: &Path) -> anyhow::Result<Box<dyn Embedder>> {
    Err(bad_input(format!(
        "the semantic layer's local model ({}) needs a build with the semantic-local feature: cargo build --release --features semantic-local",
        crate::core::terminal_text::path(dir)
    )))
}

/// The files a local model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "config.json", "tokenizer.json"];

/// The first file a local model directory lacks, as one clear error naming it and where
/// the model comes from.
pub fn check_model_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(bad_input(format!(
            "the semantic layer's model directory {} is a file, not a directory (it needs {}; scripts/fetch-minilm.sh fetches all-MiniLM-L6-v2 into target/minilm)",
            crate::core::terminal_text::path(dir),
            MODEL_FILES.join(", ")
        )));
    }
    if !dir.is_dir() {
        return Err(bad_input(format!(
            "the semantic layer's model directory {} does not exist (scripts/fetch-minilm.sh fetches all-MiniLM-L6-v2 into target/minilm)",
            crate::core::terminal_text::path(dir)
        )));
    }
    for f in MODEL_FILES {
        if !dir.join(f).is_file() {
            return Err(bad_input(format!(
                "the semantic layer's model directory {} has no {f} (it needs {}; scripts/fetch-minilm.sh fetches all-MiniLM-L6-v2 into target/minilm)",
                crate::core::terminal_text::path(dir),
                MODEL_FILES.join(", ")
            )));
        }
    }
    Ok(())
}

/// Texts embedded through the cache: what `cache` holds for `embedder` is read back, the
/// rest embedded in batches and kept. Returns the vectors in order and how many texts were
/// embedded now. Nothing is kept when embedding fails; a cache that cannot be read or
/// written is an error (after the embedding, for [`Embedded::not_kept`] to say why).
pub fn embed_cached(
    embedder: &dyn Embedder,
    cache: Option<&mut OutputCache>,
    texts: &[String],
) -> anyhow::Result<(Vec<Vec<f32>>, usize)> {
    let done = embed_keeping(embedder, cache, texts)?;
    if let Some(why) = done.not_kept {
        anyhow::bail!("{}: the vectors could not be kept: {why}", embedder.id());
    }
    Ok((done.vectors, done.embedded_now))
}

/// What [`embed_keeping`] did.
pub struct Embedded {
    /// One vector per text, in order.
    pub vectors: Vec<Vec<f32>>,
    /// Texts embedded now; the rest came from the cache.
    pub embedded_now: usize,
    /// Why the cache given could not be read or written (naming the file): the vectors
    /// were embedded all the same, and are not kept.
    pub not_kept: Option<String>,
}

/// As [`embed_cached`], a cache that cannot be read or written costing the keeping, not
/// the vectors: the reason is a value, for the caller to report.
pub fn embed_keeping(
    embedder: &dyn Embedder,
    cache: Option<&mut OutputCache>,
    texts: &[String],
) -> anyhow::Result<Embedded> {
    let hashes: Vec<String> = texts.iter().map(|t| text_hash(t)).collect();
    let mut cache = cache;
    let mut not_kept = None;
    let mut kept = Default::default();
    if let Some(c) = cache.as_deref_mut() {
        match c.vectors(embedder.id(), &hashes) {
            Ok(held) => {
                let used: Vec<String> = held.keys().cloned().collect();
                // Marked used so `cache gc` keeps them. Best effort: skipped while another
                // process writes the cache (a mark missed once is harmless: see
                // `touch_vectors`); a cache that cannot be written (read only) still serves
                // what it holds, and says the mark is lost.
                match c.touch_vectors(embedder.id(), &used) {
                    Ok(true) => {}
                    Ok(false) => tracing::debug!(
                        "another process is writing the cache: the kept vectors' last use is not recorded this run"
                    ),
                    Err(e) => crate::fsio::notice(format!(
                        "semantic layer: the kept vectors' last use is not recorded (`cache gc` \
                         may take them; they are embedded again then): {}",
                        crate::exit::Said(&e)
                    )),
                }
                kept = held;
            }
            Err(e) => {
                not_kept = Some(crate::exit::said(&e));
                cache = None;
            }
        }
    }
    // A kept vector that cannot stand for its text (kept by an older version, or damaged)
    // is embedded again.
    kept.retain(|_, v| vector_problem(v).is_none());
    let mut fresh = embed_missing(embedder, texts, &hashes, |h| kept.contains_key(h))?;
    let dims = fresh.first().map(|(_, v)| v.len());
    let kept_lengths: std::collections::BTreeSet<usize> = hashes
        .iter()
        .filter_map(|h| kept.get(h))
        .map(Vec::len)
        .collect();
    if kept_lengths.len() > 1 || dims.is_some_and(|d| kept_lengths.iter().any(|&l| l != d)) {
        // The model behind the name changed its vectors' length: what it kept before is
        // of another model, and is embedded again (and replaced) rather than mixed in.
        tracing::warn!(
            embedder = embedder.id(),
            "kept vectors of another length ({kept_lengths:?}, now {dims:?}): embedding them again"
        );
        kept.clear();
        let done: std::collections::HashSet<String> =
            fresh.iter().map(|(h, _)| h.clone()).collect();
        let again = embed_missing(embedder, texts, &hashes, |h| done.contains(h))?;
        fresh.extend(again);
        one_length(embedder, fresh.iter().map(|(_, v)| v))?;
    }
    if let Some(c) = cache
        && let Err(e) = c.keep_vectors(embedder.id(), &fresh)
    {
        not_kept = Some(crate::exit::said(&e));
    }
    let embedded_now = fresh.len();
    kept.extend(fresh);
    let vectors = hashes
        .iter()
        .map(|h| kept.get(h).cloned().unwrap_or_default())
        .collect();
    Ok(Embedded {
        vectors,
        embedded_now,
        not_kept,
    })
}

/// Each text `skip` does not cover, once, embedded ([`embed_checked`]): one (hash, vector)
/// per text.
fn embed_missing(
    embedder: &dyn Embedder,
    texts: &[String],
    hashes: &[String],
    skip: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
    let mut missing: Vec<usize> = Vec::new();
    let mut queued = std::collections::HashSet::new();
    for (i, h) in hashes.iter().enumerate() {
        if !skip(h) && queued.insert(h.as_str()) {
            missing.push(i);
        }
    }
    let batch_texts: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
    let vectors = embed_checked(embedder, &batch_texts)?;
    Ok(missing
        .iter()
        .map(|&i| hashes[i].clone())
        .zip(vectors)
        .collect())
}

/// `texts` embedded in batches of [`BATCH`]: one vector per text, every vector checked
/// ([`vector_problem`]) and all of one length, or an error and nothing of them kept — the
/// one check of an embedder's answer, for the catalog and for questions alike.
fn embed_checked(embedder: &dyn Embedder, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
    // Every batch's texts asked about before the first is sent: a refusal sends nothing.
    embedder.may_send(texts)?;
    let mut out: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(BATCH) {
        let vectors = embedder.embed(batch)?;
        if vectors.len() != batch.len() {
            anyhow::bail!(
                "{}: {} vectors for {} texts",
                embedder.id(),
                vectors.len(),
                batch.len()
            );
        }
        for (k, v) in vectors.iter().enumerate() {
            if let Some(problem) = vector_problem(v) {
                anyhow::bail!(
                    "{}: the vector of text {} of {} {problem}; nothing was kept",
                    embedder.id(),
                    out.len() + k + 1,
                    texts.len()
                );
            }
        }
        out.extend(vectors);
    }
    one_length(embedder, &out)?;
    Ok(out)
}

/// The one length of an embedder's vectors (`None` when there are none); vectors of two
/// lengths — across batches too — are an error, and nothing of them is kept.
fn one_length<'a>(
    embedder: &dyn Embedder,
    vectors: impl IntoIterator<Item = &'a Vec<f32>>,
) -> anyhow::Result<Option<usize>> {
    let mut vectors = vectors.into_iter();
    let Some(dims) = vectors.next().map(Vec::len) else {
        return Ok(None);
    };
    if let Some(other) = vectors.find(|v| v.len() != dims) {
        anyhow::bail!(
            "{}: vectors of different lengths ({dims} and {} dimensions); nothing was kept",
            embedder.id(),
            other.len()
        );
    }
    Ok(Some(dims))
}

/// Texts per call to an embedder: a batch a small model pads cheaply, and an endpoint
/// request of bounded size.
pub const BATCH: usize = 32;

/// The requests of a question as the semantic layer embeds them: as the ranker splits it
/// (at most [`MAX_REQUESTS`]), each trimmed.
pub fn request_texts(question: &str) -> Vec<String> {
    // The opening the ranker reads (split_requests cuts there too; the whole question
    // below, when nothing splits, is cut the same way).
    let question = crate::core::text::opening(question, QUERY_MAX_BYTES);
    let mut out: Vec<String> = split_requests(question)
        .into_iter()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    if out.len() > MAX_REQUESTS {
        let rest = out.split_off(MAX_REQUESTS - 1).join(" ");
        out.push(rest);
    }
    if out.is_empty() && !question.trim().is_empty() {
        out.push(question.trim().to_string());
    }
    out
}

/// Whether the semantic layer's vectors are kept between runs, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorKeeping {
    /// In this cache file: a catalog loaded again embeds only what changed.
    Kept(PathBuf),
    /// Not asked for (a read-only server keeps nothing).
    NotAsked,
    /// Asked for, but the cache could not be opened, read or written (the reason names the
    /// file, which is left as it is): every start embeds the catalog again.
    Failed(String),
}

/// A catalog's entry vectors and the embedder for questions.
pub struct Semantic {
    embedder: Box<dyn Embedder>,
    /// Replaced whole when the embedder's vectors change length behind its name.
    entries: std::sync::RwLock<EntryVectors>,
    /// The entries' sentences, to embed again then.
    texts: Vec<String>,
    /// Entries embedded when this was built (the rest came from the cache).
    pub embedded_now: usize,
    /// Whether the entry vectors are kept, for the front end to say when they are not.
    pub keeping: VectorKeeping,
    /// Request texts embedded lately: the console plans its request again on every change,
    /// and the same requests come back (a model switched, a tier, a chip added) — each is
    /// embedded once, not once per plan. Emptied when full.
    asked: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

/// Request vectors [`Semantic`] keeps at most before it empties its memory.
const ASKED_KEPT: usize = 256;

impl Semantic {
    /// Every entry of `guide` embedded, through `cache` when given.
    pub fn for_catalog(
        embedder: Box<dyn Embedder>,
        guide: &RoutingGuide,
        cache: Option<&mut OutputCache>,
    ) -> anyhow::Result<Semantic> {
        let keeping = match &cache {
            Some(c) => VectorKeeping::Kept(c.path().to_path_buf()),
            None => VectorKeeping::NotAsked,
        };
        Self::embedded(embedder, guide, cache, keeping)
    }

    /// Every entry of `guide` embedded, its vectors kept in the output cache of
    /// `cache_dir` when given (the front ends' way in). A cache that cannot be opened, read
    /// or written costs the keeping, not the layer: [`Semantic::not_cached`] says why, for
    /// the front end to tell the operator; the file is never replaced.
    pub fn for_catalog_in(
        embedder: Box<dyn Embedder>,
        guide: &RoutingGuide,
        cache_dir: Option<&Path>,
    ) -> anyhow::Result<Semantic> {
        let (mut cache, keeping) = match cache_dir.map(OutputCache::open_in) {
            None => (None, VectorKeeping::NotAsked),
            Some(Ok(c)) => {
                let path = c.path().to_path_buf();
                (Some(c), VectorKeeping::Kept(path))
            }
            Some(Err(e)) => (None, VectorKeeping::Failed(crate::exit::said(&e))),
        };
        Self::embedded(embedder, guide, cache.as_mut(), keeping)
    }

    fn embedded(
        embedder: Box<dyn Embedder>,
        guide: &RoutingGuide,
        cache: Option<&mut OutputCache>,
        keeping: VectorKeeping,
    ) -> anyhow::Result<Semantic> {
        let texts: Vec<String> = (0..guide.entry_count())
            .map(|i| entry_sentence(guide, i))
            .collect();
        let done = embed_keeping(embedder.as_ref(), cache, &texts)?;
        let entries = EntryVectors::new(done.vectors)
            .ok_or_else(|| anyhow::anyhow!("{}: vectors of different lengths", embedder.id()))?;
        Ok(Semantic {
            embedder,
            entries: std::sync::RwLock::new(entries),
            texts,
            embedded_now: done.embedded_now,
            keeping: done.not_kept.map_or(keeping, VectorKeeping::Failed),
            asked: Default::default(),
        })
    }

    /// Why the entry vectors are not kept, when they were to be.
    pub fn not_cached(&self) -> Option<&str> {
        match &self.keeping {
            VectorKeeping::Failed(why) => Some(why),
            _ => None,
        }
    }

    /// What every front end says when the vectors are not kept: one wording for the
    /// console's status line, the CLI's stderr and the MCP server's.
    pub fn not_cached_note(&self) -> Option<String> {
        self.not_cached()
            .map(|why| format!("vectors not cached: {why}"))
    }

    pub fn embedder_id(&self) -> &str {
        self.embedder.id()
    }

    /// How many catalog entries have a vector.
    pub fn entry_count(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The catalog embedded again, its vectors of `dims` replacing the kept ones: the
    /// embedder now answers vectors of another length than it did when they were kept (a
    /// model changed behind its name), and a question's vector of one length against
    /// entries of another would rank as no similarity while the layer says it is on.
    fn embed_entries_again(&self, dims: usize) -> anyhow::Result<()> {
        let id = self.embedder.id();
        tracing::warn!(
            embedder = id,
            dims,
            "the embedder's vectors changed length: embedding the catalog again"
        );
        let hashes: Vec<String> = self.texts.iter().map(|t| text_hash(t)).collect();
        let fresh = embed_missing(self.embedder.as_ref(), &self.texts, &hashes, |_| false)?;
        if fresh.first().is_some_and(|(_, v)| v.len() != dims) {
            anyhow::bail!("{id}: its vectors change length from one answer to the next");
        }
        // Said as the layer's start says it (`not_cached_note`): this runs after it, in a
        // layer that lives on, so the front end hears it as a notice.
        if let VectorKeeping::Kept(path) = &self.keeping
            && let Err(e) = OutputCache::open(path).and_then(|mut c| c.keep_vectors(id, &fresh))
        {
            crate::fsio::notice(format!(
                "semantic layer: vectors not cached: {}",
                crate::exit::Said(&e)
            ));
        }
        let by_hash: std::collections::HashMap<String, Vec<f32>> = fresh.into_iter().collect();
        let rows = hashes
            .iter()
            .map(|h| by_hash.get(h).cloned().unwrap_or_default())
            .collect();
        let entries = EntryVectors::new(rows)
            .ok_or_else(|| anyhow::anyhow!("{id}: vectors of different lengths"))?;
        *self.entries.write().unwrap_or_else(PoisonError::into_inner) = entries;
        // Requests remembered at the old length would not meet the new rows.
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        Ok(())
    }

    /// Per request of the question (one vector each, as the ranker splits it), every
    /// entry's similarity to it: [`crate::core::rank::RankIndex::rank_semantic`]'s input.
    pub fn similarities(&self, question: &str) -> anyhow::Result<Vec<Vec<f64>>> {
        let requests = request_texts(question);
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let entry_dims = self.entry_dims();
        // Only what was remembered at the entries' length: a request remembered before the
        // embedder changed its vectors' length is asked again.
        let mut vectors: Vec<Option<Vec<f32>>> = {
            let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
            requests
                .iter()
                .map(|r| asked.get(r).filter(|v| v.len() == entry_dims).cloned())
                .collect()
        };
        let missing: Vec<String> = requests
            .iter()
            .zip(&vectors)
            .filter(|(_, v)| v.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        let fresh = embed_checked(self.embedder.as_ref(), &missing)?;
        let new_dims = fresh.first().map(Vec::len).filter(|&d| d != entry_dims);
        let mut fresh = fresh.into_iter();
        // Which slots were remembered (at the entries' old length, should it change).
        let remembered: Vec<bool> = vectors.iter().map(Option::is_some).collect();
        for slot in vectors.iter_mut().filter(|v| v.is_none()) {
            *slot = fresh.next();
        }
        if let Some(dims) = new_dims {
            // The embedder's vectors changed length behind its name: the catalog is embedded
            // again at the new length, and so is every request remembered at the old one.
            self.embed_entries_again(dims)?;
            let stale: Vec<usize> = (0..requests.len()).filter(|&k| remembered[k]).collect();
            let texts: Vec<String> = stale.iter().map(|&k| requests[k].clone()).collect();
            let again = embed_checked(self.embedder.as_ref(), &texts)?;
            if again.iter().any(|v| v.len() != dims) {
                anyhow::bail!(
                    "{}: its vectors change length from one answer to the next",
                    self.embedder.id()
                );
            }
            for (k, v) in stale.into_iter().zip(again) {
                vectors[k] = Some(v);
            }
        }
        self.remember(&requests, &vectors);
        let vectors: Vec<Vec<f32>> = vectors.into_iter().map(Option::unwrap_or_default).collect();
        Ok(self
            .entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .request_similarities(&vectors))
    }

    /// As [`Semantic::similarities`], from the vectors remembered for the question's
    /// requests alone, never asking the embedder: `None` when one of them is not
    /// remembered (the console plans with this while the text is still being typed).
    pub fn remembered_similarities(&self, question: &str) -> Option<Vec<Vec<f64>>> {
        let requests = request_texts(question);
        let entry_dims = self.entry_dims();
        let vectors: Vec<Vec<f32>> = {
            let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
            requests
                .iter()
                .map(|r| asked.get(r).filter(|v| v.len() == entry_dims).cloned())
                .collect::<Option<_>>()?
        };
        if vectors.is_empty() {
            return Some(Vec::new());
        }
        Some(
            self.entries
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .request_similarities(&vectors),
        )
    }

    fn entry_dims(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .dims()
    }

    /// The requests' vectors kept for the next plan of the same text.
    fn remember(&self, requests: &[String], vectors: &[Option<Vec<f32>>]) {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.len() + requests.len() > ASKED_KEPT {
            asked.clear();
        }
        for (r, v) in requests.iter().zip(vectors) {
            if let Some(v) = v {
                asked.insert(r.clone(), v.clone());
            }
        }
    }
}

/// Each question's similarities (per request, every entry's) over a catalog, every entry
/// and request embedded through `cache`: how `eval rank --semantic` and the sweep measure
/// the layer. Returns them and how many texts were embedded now.
pub fn question_similarities(
    embedder: &dyn Embedder,
    cache: Option<&mut OutputCache>,
    guide: &RoutingGuide,
    questions: &[&str],
) -> anyhow::Result<(Vec<Vec<Vec<f64>>>, usize)> {
    let mut texts: Vec<String> = (0..guide.entry_count())
        .map(|i| entry_sentence(guide, i))
        .collect();
    let entries = texts.len();
    let mut spans = Vec::with_capacity(questions.len());
    for q in questions {
        let r = request_texts(q);
        spans.push(texts.len()..texts.len() + r.len());
        texts.extend(r);
    }
    let (mut vectors, embedded) = embed_cached(embedder, cache, &texts)?;
    let asked = vectors.split_off(entries);
    let entry_vectors = EntryVectors::new(vectors)
        .ok_or_else(|| anyhow::anyhow!("{}: vectors of different lengths", embedder.id()))?;
    let sims = spans
        .into_iter()
        .map(|span| {
            let span = (span.start - entries)..(span.end - entries);
            entry_vectors.request_similarities(&asked[span])
        })
        .collect();
    Ok((sims, embedded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Letters counted into a vector: a real, deterministic embedding for the cache's test.
    struct Letters(AtomicUsize);

    impl Embedder for Letters {
        fn id(&self) -> &str {
            "letters"
        }
        fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0f32; 26];
                    for b in t.bytes().filter(u8::is_ascii_lowercase) {
                        v[usize::from(b - b'a')] += 1.0;
                    }
                    v
                })
                .collect())
        }
    }

    #[test]
    fn a_second_load_embeds_nothing_new() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = ["find a hotel", "book a flight", "find a hotel"]
            .map(String::from)
            .to_vec();
        let letters = Letters(AtomicUsize::new(0));
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let (v, now) = embed_cached(&letters, Some(&mut cache), &texts).unwrap();
        assert_eq!((now, letters.0.load(Ordering::SeqCst)), (2, 2));
        assert_eq!(v[0], v[2]);
        let mut cache = OutputCache::open_in(dir.path()).unwrap();
        let (again, now) = embed_cached(&letters, Some(&mut cache), &texts).unwrap();
        assert_eq!((now, letters.0.load(Ordering::SeqCst)), (0, 2));
        assert_eq!(again, v);
    }

    #[test]
    fn specs_parse_and_a_wrong_one_says_what_is_expected() {
        assert_eq!(
            SemanticSpec::parse("local:/m", "x").unwrap(),
            SemanticSpec::Local("/m".into())
        );
        assert_eq!(
            SemanticSpec::parse(" endpoint:ollama/nomic ", "x").unwrap(),
            SemanticSpec::Endpoint("ollama/nomic".into())
        );
        let err = SemanticSpec::parse("minilm", "config.toml: rank.semantic")
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml: rank.semantic") && err.contains("local:DIR"));
    }

    /// Tester F8: `--embedder endpoint:MODEL` (and `[rank] semantic`) sent a model id
    /// holding ESC and a line break to the provider, where `--model` refuses it: one name
    /// rule for every model id.
    #[test]
    fn an_embedder_model_id_is_held_to_the_model_name_rule() {
        for bad in [
            "endpoint:bad/a\x1b[31m\nFAKE",
            "endpoint:t/x\u{200B}",
            "endpoint:t/a\tb",
        ] {
            let err = SemanticSpec::parse(bad, "--embedder")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("--embedder: ")
                    && err.contains("holds a control, bidi or invisible character"),
                "{err}"
            );
            assert!(!err.contains(['\n', '\x1b']), "{err:?}");
        }
        let long = format!("endpoint:t/{}", "m".repeat(600));
        assert!(SemanticSpec::parse(&long, "x").is_err());
        assert_eq!(
            SemanticSpec::parse("endpoint:t/nomic-embed", "x").unwrap(),
            SemanticSpec::Endpoint("t/nomic-embed".into())
        );
    }

    /// Letters, counting into a counter the test keeps.
    struct Shared(std::sync::Arc<AtomicUsize>);

    impl Embedder for Shared {
        fn id(&self) -> &str {
            "letters"
        }
        fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Letters(AtomicUsize::new(0)).embed(texts)
        }
    }

    #[test]
    fn a_request_planned_again_is_not_embedded_again() {
        let guide: RoutingGuide = serde_json::from_str(crate::sample::SAMPLE_CATALOG).unwrap();
        let counter = std::sync::Arc::new(AtomicUsize::new(0));
        let layer = Semantic::for_catalog(Box::new(Shared(counter.clone())), &guide, None).unwrap();
        let built = counter.load(Ordering::SeqCst);
        let question = "Book a flight to Rome. Then find a hotel near the station";
        let first = layer.similarities(question).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(counter.load(Ordering::SeqCst), built + 2);
        // The same question again, and one sharing its first request: only the new request
        // is embedded.
        assert_eq!(layer.similarities(question).unwrap(), first);
        assert_eq!(counter.load(Ordering::SeqCst), built + 2);
        let other = layer
            .similarities("Book a flight to Rome. Then rent a car")
            .unwrap();
        assert_eq!(counter.load(Ordering::SeqCst), built + 3);
        assert_eq!(other[0], first[0]);
    }

    /// Letters folded into `dims` dimensions (changed while the layer is alive), failing
    /// while `down` is set: a model swapped behind its name, an endpoint that goes away.
    struct Changing {
        dims: std::sync::Arc<AtomicUsize>,
        down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Embedder for Changing {
        fn id(&self) -> &str {
            "changing"
        }
        fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
            if self.down.load(Ordering::SeqCst) {
                anyhow::bail!("changing: down");
            }
            let dims = self.dims.load(Ordering::SeqCst);
            Ok(Letters(AtomicUsize::new(0))
                .embed(texts)?
                .into_iter()
                .map(|v| {
                    let mut out = vec![0.0f32; dims];
                    v.iter().enumerate().for_each(|(i, x)| out[i % dims] += x);
                    out
                })
                .collect())
        }
    }

    /// Tester 4's N2: in a long-lived layer (the console, `mcp`), the first question after
    /// the embedder's vectors change length is answered at the new length — the catalog and
    /// the remembered requests embedded again — not an error; a failed call remembers
    /// nothing, so the next call after the endpoint is back succeeds.
    #[test]
    fn a_long_lived_layer_follows_its_embedder_to_a_new_length() {
        let guide: RoutingGuide = serde_json::from_str(crate::sample::SAMPLE_CATALOG).unwrap();
        let dims = std::sync::Arc::new(AtomicUsize::new(26));
        let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let embedder = Changing {
            dims: dims.clone(),
            down: down.clone(),
        };
        let layer = Semantic::for_catalog(Box::new(embedder), &guide, None).unwrap();
        let question = "Book a flight to Rome. Then find a hotel near the station";
        let at_26 = layer.similarities(question).unwrap();
        assert!(at_26.iter().flatten().any(|&s| s > 0.1));
        dims.store(13, Ordering::SeqCst);
        // One request remembered at 26, one new: both answered at 13.
        let mixed = layer
            .similarities("Book a flight to Rome. Then summarise the results")
            .unwrap();
        assert_eq!(layer.entry_dims(), 13);
        assert!(
            mixed.iter().all(|row| row.iter().any(|&s| s > 0.1)),
            "{mixed:?}"
        );
        assert_eq!(layer.similarities(question).unwrap().len(), 2);
        // Down, then back: the failure remembers nothing.
        down.store(true, Ordering::SeqCst);
        dims.store(7, Ordering::SeqCst);
        assert!(layer.similarities("convert the price to euros").is_err());
        down.store(false, Ordering::SeqCst);
        let back = layer.similarities("convert the price to euros").unwrap();
        assert_eq!(layer.entry_dims(), 7);
        assert!(back[0].iter().any(|&s| s > 0.1));
    }

    #[test]
    fn a_question_is_embedded_request_by_request() {
        let r = request_texts("Book a flight to Rome. Then find a hotel near the station");
        assert_eq!(r.len(), 2, "{r:?}");
    }
}
