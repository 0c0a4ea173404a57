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

use super::{Embedder, check_model_dir};
use crate::core::rank::unit;
use crate::exit::bad_input;

/// Tokens read per text: the model's `max_seq_length` (sentence_bert_config.json).
pub const MAX_TOKENS: usize = 256;

pub struct LocalEmbedder {
    dir: PathBuf,
    id: String,
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
}

impl LocalEmbedder {
    /// Load the model in `dir`; a missing file is one error naming it and the directory.
    pub fn open(dir: &Path) -> anyhow::Result<LocalEmbedder> {
        check_model_dir(dir)?;
        let named = |f: &str| crate::core::terminal_text::path(&dir.join(f)).into_owned();
        let config_text = crate::import::read_text(&dir.join("config.json"))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| bad_input(format!("{}: not a BERT config: {e}", named("config.json"))))?;
        let tokenizer_bytes = crate::fsio::read_regular(&dir.join("tokenizer.json"))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| bad_input(format!("{}: not a tokenizer: {e}", named("tokenizer.json"))))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| anyhow::anyhow!("{}: {e}", named("tokenizer.json")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let weights = crate::fsio::read_regular(&dir.join("model.safetensors"))?;
        let weights_len = weights.len();
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
        // The directory's name and the weights' size tell models apart for the cache; the
        // config's hash catches a changed shape.
        let name = dir.file_name().map_or_else(
            || dir.shown().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let id = format!(
            "local {name} {weights_len} {}",
            &crate::store::cache::text_hash(&config_text)[..12]
        );
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
        self.run(texts).map_err(|e| {
            anyhow::anyhow!(
                "embedding with the model in {}: {}",
                crate::core::terminal_text::path(&self.dir),
                first_line(&format!("{e:#}"))
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
