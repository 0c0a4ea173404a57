//! A BERT sentence-embedding model (all-MiniLM-L6-v2 and its kin) run in-process with candle
//! on the CPU: the directory's `tokenizer.json` splits the text, `model.safetensors` and
//! `config.json` make the encoder, and the sentence vector is the mean of the token vectors
//! under the attention mask, scaled to unit length — what sentence-transformers does for
//! this model (`1_Pooling/config.json`: mean pooling; then `Normalize`).

use crate::core::terminal_text::ShownPath;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use sha2::{Digest, Sha256};

use super::{Embedder, check_model_dir};
use crate::core::error::CoreError;
use crate::core::rank::unit;
use crate::exit::bad_input;
use crate::fsio::MODEL_WEIGHTS;

/// Tokens read per text: the model's `max_seq_length` (sentence_bert_config.json), or its
/// `max_position_embeddings` when that is fewer (see [`LocalEmbedder::open`]).
pub const MAX_TOKENS: usize = 256;

pub struct LocalEmbedder {
    dir: PathBuf,
    id: String,
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
}

impl LocalEmbedder {
    /// Load the model in `dir`; a missing file is one error naming it and the directory, a
    /// config's size out of bounds one naming the file and the field, and a panic inside
    /// candle or tokenizers while loading one naming the directory (exit 2 for each).
    pub fn open(dir: &Path) -> anyhow::Result<LocalEmbedder> {
        check_model_dir(dir)?;
        crate::panics::caught(|| LocalEmbedder::load(dir)).unwrap_or_else(|panic| {
            Err(bad_input(format!(
                "the model in {}: its library failed while loading it: {}",
                crate::core::terminal_text::path(dir),
                shortened(&panic)
            )))
        })
    }

    fn load(dir: &Path) -> anyhow::Result<LocalEmbedder> {
        let named = |f: &str| crate::core::terminal_text::path(&dir.join(f)).into_owned();
        let config_text = crate::import::read_text(&dir.join("config.json"))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| bad_input(format!("{}: not a BERT config: {e}", named("config.json"))))?;
        check_config(&config, &named("config.json")).map_err(|e| bad_input(e.to_string()))?;
        let tokenizer_bytes = crate::fsio::read_regular(&dir.join("tokenizer.json"))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| bad_input(format!("{}: not a tokenizer: {e}", named("tokenizer.json"))))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                // A text longer than the model has positions fails the whole run (tester
                // 16 F3): cut at the smaller.
                max_length: MAX_TOKENS.min(config.max_position_embeddings),
                ..Default::default()
            }))
            .map_err(|e| anyhow::anyhow!("{}: {e}", named("tokenizer.json")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        // Tokenizing on this thread rather than tokenizers' thread pool: a panic there is
        // then one `panics::caught` turns into an error; a batch is 32 texts at most.
        tokenizers::utils::parallelism::set_parallelism(false);
        let weights =
            crate::fsio::read_regular_within(&dir.join("model.safetensors"), MODEL_WEIGHTS)?;
        // Cached vectors are keyed by the id: any change to the weights, the tokenizer or
        // the config is another model, whatever the directory is called (tester 16 F2: a
        // fine-tune of the same name and size read the old model's vectors).
        let name = dir.file_name().map_or_else(
            || dir.shown().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let id = format!(
            "local {name} {}",
            model_fingerprint(&[&weights, &tokenizer_bytes, config_text.as_bytes()])
        );
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                bad_input(format!(
                    "{}: {}",
                    named("model.safetensors"),
                    first_line(&e.to_string())
                ))
            })?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            bad_input(format!(
                "{}: not the BERT model its config.json describes: {}",
                named("model.safetensors"),
                first_line(&e.to_string())
            ))
        })?;
        Ok(LocalEmbedder {
            dir: dir.to_path_buf(),
            id,
            tokenizer,
            model,
            device,
        })
    }

    fn run(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * width);
        let mut types = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for e in &encodings {
            ids.extend_from_slice(e.get_ids());
            types.extend_from_slice(e.get_type_ids());
            mask.extend_from_slice(e.get_attention_mask());
        }
        let shape = (rows, width);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let types = Tensor::from_vec(types, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the real tokens: padding counts for nothing.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let mut out: Vec<Vec<f32>> = mean.to_vec2()?;
        out.iter_mut().for_each(|v| unit(v));
        Ok(out)
    }
}

impl Embedder for LocalEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let dir = crate::core::terminal_text::path(&self.dir);
        crate::panics::caught(|| self.run(texts))
            .unwrap_or_else(|panic| {
                Err(anyhow::anyhow!("its library failed: {}", shortened(&panic)))
            })
            .map_err(|e| {
                anyhow::anyhow!(
                    "embedding with the model in {dir}: {}",
                    first_line(&crate::exit::said(&e))
                )
            })
    }
}

/// The message of a model library's error without what follows its first line: with
/// `RUST_BACKTRACE` set, candle puts a backtrace of its own frames there, which is no
/// message for an operator.
fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("").trim_end()
}

/// The sizes `config.json` gives, each inside its bound (`core::bounds::BERT_*`), and the
/// hidden size a whole number of heads: candle divides by them before it compares a weight.
fn check_config(config: &Config, origin: &str) -> Result<(), CoreError> {
    use crate::core::bounds::*;
    int_in(
        config.num_hidden_layers,
        &BERT_LAYERS,
        origin,
        "num_hidden_layers",
    )?;
    let heads = int_in(
        config.num_attention_heads,
        &BERT_HEADS,
        origin,
        "num_attention_heads",
    )?;
    let hidden = int_in(config.hidden_size, &BERT_HIDDEN, origin, "hidden_size")?;
    if hidden % heads != 0 {
        return Err(CoreError::Field {
            origin: origin.to_string(),
            field: "hidden_size".to_string(),
            problem: format!("is {hidden}; expected a multiple of num_attention_heads ({heads})"),
        });
    }
    int_in(
        config.intermediate_size,
        &BERT_INTERMEDIATE,
        origin,
        "intermediate_size",
    )?;
    int_in(
        config.max_position_embeddings,
        &BERT_POSITIONS,
        origin,
        "max_position_embeddings",
    )?;
    int_in(config.vocab_size, &BERT_VOCAB, origin, "vocab_size")?;
    int_in(
        config.type_vocab_size,
        &BERT_TYPE_VOCAB,
        origin,
        "type_vocab_size",
    )?;
    finite_in(
        config.layer_norm_eps,
        &BERT_LAYER_NORM_EPS,
        origin,
        "layer_norm_eps",
    )?;
    Ok(())
}

/// The hex opening of a SHA-256 over `files`' contents, each preceded by its length so no
/// two sets of files run together alike: what tells two models apart in the cache.
fn model_fingerprint(files: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update((file.len() as u64).to_le_bytes());
        hasher.update(file);
    }
    crate::core::text::hex(&hasher.finalize()[..8])
}

/// A caught panic's message with its source file from the crate's directory on (`candle-
/// transformers-0.11.1/src/models/bert.rs:218`), not the whole path of cargo's registry.
fn shortened(panic: &str) -> String {
    let Some(at) = panic.rfind("(a panic at ") else {
        return panic.to_string();
    };
    let place = &panic[at + "(a panic at ".len()..];
    let parts: Vec<&str> = place.split('/').collect();
    match parts.iter().rposition(|p| *p == "src") {
        Some(src) if src > 0 => {
            format!("{}(a panic at {}", &panic[..at], parts[src - 1..].join("/"))
        }
        _ => panic.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minilm_config() -> Config {
        serde_json::from_str(
            r#"{"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
                "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "max_position_embeddings": 512,
                "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
                "pad_token_id": 0}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_config_size_out_of_bounds_names_the_file_and_the_field() {
        assert_eq!(check_config(&minilm_config(), "m/config.json"), Ok(()));
        let cases: [(fn(&mut Config), &str); 9] = [
            (
                |c| c.num_attention_heads = 0,
                "field 'num_attention_heads' is 0;",
            ),
            (
                |c| c.num_attention_heads = 5,
                "field 'hidden_size' is 384; expected a multiple of num_attention_heads (5)",
            ),
            (|c| c.hidden_size = 0, "field 'hidden_size' is 0;"),
            (
                |c| c.num_hidden_layers = 0,
                "field 'num_hidden_layers' is 0;",
            ),
            (
                |c| c.intermediate_size = 0,
                "field 'intermediate_size' is 0;",
            ),
            (
                |c| c.max_position_embeddings = 0,
                "field 'max_position_embeddings' is 0;",
            ),
            (|c| c.vocab_size = 0, "field 'vocab_size' is 0;"),
            (
                |c| c.hidden_size = 999_999_999_999,
                "field 'hidden_size' is 999999999999;",
            ),
            (
                |c| c.layer_norm_eps = f64::NAN,
                "field 'layer_norm_eps' is NaN;",
            ),
        ];
        for (change, says) in cases {
            let mut config = minilm_config();
            change(&mut config);
            let err = check_config(&config, "m/config.json")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("m/config.json: ") && err.contains(says),
                "{err}"
            );
        }
    }

    #[test]
    fn a_fingerprint_changes_with_any_file_and_with_where_they_part() {
        let base = model_fingerprint(&[b"weights", b"tokenizer", b"config"]);
        assert_eq!(base.len(), 16);
        assert_eq!(
            base,
            model_fingerprint(&[b"weights", b"tokenizer", b"config"])
        );
        for other in [
            model_fingerprint(&[b"weightz", b"tokenizer", b"config"]),
            model_fingerprint(&[b"weights", b"tokenize!", b"config"]),
            model_fingerprint(&[b"weights", b"tokenizer", b"config "]),
            model_fingerprint(&[b"weightst", b"okenizer", b"config"]),
        ] {
            assert_ne!(other, base);
        }
    }

    #[test]
    fn a_panics_place_is_said_from_its_crate_on() {
        assert_eq!(
            shortened(
                "attempt to divide by zero (a panic at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/candle-transformers-0.11.1/src/models/bert.rs:218)"
            ),
            "attempt to divide by zero (a panic at candle-transformers-0.11.1/src/models/bert.rs:218)"
        );
        assert_eq!(shortened("boom"), "boom");
        assert_eq!(
            shortened("boom (a panic at src/panics.rs:9)"),
            "boom (a panic at src/panics.rs:9)"
        );
    }
}
