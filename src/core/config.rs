//! `config.toml`: the settings that are not budgets, catalog, rules, keys or colours —
//! history drift window, the live client's timeouts and retries, providers. Parsed and
//! checked here (pure: text in, values or an error naming file and key out); the workspace
//! reads the file and the client uses the values.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::core::bounds::{self, int_in};
use crate::core::duration::{self, parse_duration};
use crate::core::error::CoreError;

/// `config.toml`: settings with defaults in code.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub history: HistoryConfig,
    #[serde(default)]
    pub llm: LlmConfig,
    /// Model-id prefix → endpoint; a user's entry replaces the sample's of the same name.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub rank: RankConfig,
}

/// How the ranker ranks.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankConfig {
    /// The semantic layer's embedder (off when unset): `local:DIR` (a sentence-embedding
    /// model directory: `model.safetensors`, `config.json`, `tokenizer.json`) or
    /// `endpoint:MODEL` (an OpenAI-compatible `/embeddings`, the model id routed to a
    /// provider as chat models are).
    pub semantic: Option<String>,
}

/// How the client talks to endpoints. Durations as `10s`, `500ms`, `5m`.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    #[serde(default, deserialize_with = "duration_text")]
    pub connect_timeout: Option<String>,
    /// From sending the request to the last byte of the reply.
    #[serde(default, deserialize_with = "duration_text")]
    pub timeout: Option<String>,
    /// Retries after a 429, a 5xx or a refused connection.
    #[serde(default, deserialize_with = "retries_of")]
    pub retries: Option<u32>,
    /// How many requests one `send` (or the console's send) has in flight at once: 1 for a
    /// local server with one slot, which would otherwise queue or interrupt them.
    #[serde(default, deserialize_with = "concurrency_of")]
    pub concurrency: Option<u32>,
    /// First backoff; it doubles per retry.
    #[serde(default, deserialize_with = "duration_text")]
    pub retry_base: Option<String>,
    /// A retry-after longer than this is not waited for.
    #[serde(default, deserialize_with = "duration_text")]
    pub retry_max_wait: Option<String>,
    pub stream: Option<bool>,
    /// A reply larger than this many bytes fails as `protocol`, its opening kept.
    #[serde(default, deserialize_with = "max_reply_bytes_of")]
    pub max_reply_bytes: Option<u64>,
    /// The provider for model ids no prefix matches (sent unchanged).
    pub default_provider: Option<String>,
    /// Names the planner answers to; a plan calling one is demoted by the guard.
    pub self_names: Option<Vec<String>>,
    /// A strong model `send` also asks, with the whole catalog and no planner help, to
    /// compare each plan with (`--baseline` names one for a run, `--no-baseline` skips it).
    pub baseline_model: Option<String>,
}

/// A duration key's text, read as a string: any other value is said to want a duration
/// ("field 'llm.timeout' is 0; expected a duration as a string, such as \"20s\""), not
/// only "a string". Its bound is checked where the text is read ([`LlmConfig::durations`]).
fn duration_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a duration as a string, such as \"20s\", \"500ms\" or \"5m\"")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_str(Text).map(Some)
}

fn retries_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    bounds::whole_number(d, &bounds::RETRIES, "llm.retries").map(Some)
}

fn concurrency_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    bounds::whole_number(d, &bounds::CONCURRENCY, "llm.concurrency").map(Some)
}

fn max_reply_bytes_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    bounds::whole_number(d, &bounds::REPLY_BYTES, "llm.max_reply_bytes").map(Some)
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Model ids starting with this go here, with the prefix removed.
    pub prefix: String,
    /// The OpenAI-compatible base, e.g. `https://openrouter.ai/api/v1`.
    pub base_url: String,
    /// The *name* of the environment variable holding the key; the key itself is never
    /// read from or written to any file.
    pub key_env: Option<String>,
    pub stream: Option<bool>,
}

impl Config {
    /// Parse and check a `config.toml` text: every duration within its bound (see
    /// [`crate::core::duration`]), every number in range. `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, CoreError> {
        let config: Config = toml::from_str(text).map_err(|e| CoreError::toml(origin, text, &e))?;
        config.history.drift_window(origin)?;
        config.llm.durations(origin)?;
        config.llm.retries(origin)?;
        config.llm.concurrency(origin)?;
        // The one name rule, as `--baseline` is held to it: the id is sent, budgeted and
        // stored as every compared plan's baseline model, and must import back.
        if let Some(problem) = config
            .llm
            .baseline_model
            .as_deref()
            .and_then(crate::core::budget::model_id_problem)
        {
            let problem = if problem == "is empty" {
                "is empty; name a model id, or leave the key out for no baseline".to_string()
            } else {
                problem.to_string()
            };
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: "llm.baseline_model".into(),
                problem,
            });
        }
        Ok(config)
    }

    /// The names of the environment variables holding provider keys, sorted, each once.
    pub fn key_variables(&self) -> Vec<String> {
        let names: std::collections::BTreeSet<String> = self
            .providers
            .values()
            .filter_map(|p| p.key_env.clone())
            .collect();
        names.into_iter().collect()
    }

    /// `over`'s settings laid on top of these: set fields win, providers replace by name.
    pub fn overlay(mut self, over: Config) -> Config {
        let (a, b) = (&mut self.llm, over.llm);
        a.connect_timeout = b.connect_timeout.or(a.connect_timeout.take());
        a.timeout = b.timeout.or(a.timeout.take());
        a.retries = b.retries.or(a.retries);
        a.concurrency = b.concurrency.or(a.concurrency);
        a.retry_base = b.retry_base.or(a.retry_base.take());
        a.retry_max_wait = b.retry_max_wait.or(a.retry_max_wait.take());
        a.stream = b.stream.or(a.stream);
        a.max_reply_bytes = b.max_reply_bytes.or(a.max_reply_bytes);
        a.default_provider = b.default_provider.or(a.default_provider.take());
        a.self_names = b.self_names.or(a.self_names.take());
        a.baseline_model = b.baseline_model.or(a.baseline_model.take());
        self.history.drift_window = over.history.drift_window.or(self.history.drift_window);
        self.providers.extend(over.providers);
        self.rank.semantic = over.rank.semantic.or(self.rank.semantic.take());
        self
    }
}

#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// How long after a plan an execution without a plan id still counts for it (`15m`).
    #[serde(default, deserialize_with = "duration_text")]
    pub drift_window: Option<String>,
}

/// A duration key's value, checked against its bound; the error names the file and key.
fn config_duration(
    origin: &str,
    key: &str,
    value: Option<&str>,
    range: RangeInclusive<Duration>,
) -> Result<Option<Duration>, CoreError> {
    value
        .map(|v| {
            parse_duration(v, range).map_err(|e| CoreError::Field {
                origin: origin.to_string(),
                field: key.to_string(),
                problem: format!("= {e}"),
            })
        })
        .transpose()
}

impl HistoryConfig {
    /// `drift_window` as a duration, within [`duration::DRIFT_WINDOW`].
    pub fn drift_window(&self, origin: &str) -> Result<Option<Duration>, CoreError> {
        config_duration(
            origin,
            "history.drift_window",
            self.drift_window.as_deref(),
            duration::DRIFT_WINDOW,
        )
    }
}

/// The `[llm]` durations as values; `None` where the key is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmDurations {
    pub connect_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    pub retry_base: Option<Duration>,
    pub retry_max_wait: Option<Duration>,
}

impl LlmConfig {
    /// Each duration key checked against its bound (see [`crate::core::duration`]).
    pub fn durations(&self, origin: &str) -> Result<LlmDurations, CoreError> {
        let key = |name: &str, value: &Option<String>, range| {
            config_duration(origin, &format!("llm.{name}"), value.as_deref(), range)
        };
        Ok(LlmDurations {
            connect_timeout: key(
                "connect_timeout",
                &self.connect_timeout,
                duration::CONNECT_TIMEOUT,
            )?,
            timeout: key("timeout", &self.timeout, duration::REQUEST_TIMEOUT)?,
            retry_base: key("retry_base", &self.retry_base, duration::RETRY_BASE)?,
            retry_max_wait: key(
                "retry_max_wait",
                &self.retry_max_wait,
                duration::RETRY_MAX_WAIT,
            )?,
        })
    }

    /// `concurrency`, within [`bounds::CONCURRENCY`].
    pub fn concurrency(&self, origin: &str) -> Result<Option<u32>, CoreError> {
        self.concurrency
            .map(|n| int_in(n, &bounds::CONCURRENCY, origin, "llm.concurrency"))
            .transpose()
    }

    /// `retries`, within [`bounds::RETRIES`].
    pub fn retries(&self, origin: &str) -> Result<Option<u32>, CoreError> {
        self.retries
            .map(|n| int_in(n, &bounds::RETRIES, origin, "llm.retries"))
            .transpose()
    }
}
