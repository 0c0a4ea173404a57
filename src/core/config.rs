//! `config.toml`: the settings that are not budgets, catalog, rules, keys or colours —
//! history drift window, the live client's timeouts and retries, providers. Parsed and
//! checked here (pure: text in, values or an error naming file and key out); the workspace
//! reads the file and the client uses the values.

/// The environment variable `ctxconsole mcp`'s bearer token may come in: unlike `--token`,
/// not shown to every local user by `ps`. Named here, below both, so the server reads it and
/// `compact --mcp` withholds it from the servers it starts.
pub const MCP_TOKEN_ENV: &str = "CTXCONSOLE_MCP_TOKEN";

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::core::bounds::{self, int_in};
use crate::core::duration::{self, parse_duration};
use crate::core::error::CoreError;
use crate::core::terminal_text::quoted;

/// `config.toml`: settings with defaults in code.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub cache: CacheConfig,
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

/// The output cache of briefed pastes.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// The most paste content the cache holds, in bytes, within [`bounds::CACHE_BYTES`]:
    /// storing evicts the least recently stored entries to stay within it.
    #[serde(default, deserialize_with = "cache_bytes_of")]
    pub max_bytes: Option<u64>,
}

fn cache_bytes_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    bounds::whole_number(d, &bounds::CACHE_BYTES, "cache.max_bytes").map(Some)
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
        for (name, p) in &config.providers {
            if let Some(problem) = p.key_env.as_deref().and_then(key_env_problem) {
                return Err(CoreError::Field {
                    origin: origin.to_string(),
                    field: format!(
                        "providers.{}.key_env",
                        crate::core::terminal_text::key_segment(name)
                    ),
                    problem,
                });
            }
        }
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
        self.cache.max_bytes = over.cache.max_bytes.or(self.cache.max_bytes);
        self
    }

    /// `[cache] max_bytes`, or [`bounds::CACHE_BYTES_DEFAULT`] when not set.
    pub fn cache_max_bytes(&self) -> u64 {
        self.cache.max_bytes.unwrap_or(bounds::CACHE_BYTES_DEFAULT)
    }
}

/// The shortest run of letters and digits (no `_`) with both in it that reads as a key
/// rather than a variable's name: 32, the length of a hex key; no usual name has one.
const KEY_LIKE_RUN: usize = 32;

/// What is wrong with `key_env`'s value, never quoting it: it may be the key itself,
/// written where the variable's name goes (tester 12 T12-13: the error naming the missing
/// variable then printed the key on stdout, stderr and into the log). A variable name is
/// `[A-Za-z_][A-Za-z0-9_]*`; anything else is refused, and so is a name holding a long run of
/// letters and digits, which is a key (a hex key is a valid name), said by its length only.
pub fn key_env_problem(value: &str) -> Option<String> {
    let mut chars = value.chars();
    let named = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let length = value.chars().count();
    if !named {
        return Some(format!(
            "is not the name of an environment variable ({length} characters; a name is \
             letters, digits and _, not starting with a digit): write the name of the \
             variable holding the key, such as OPENROUTER_API_KEY, not the key (the value is \
             not shown, as it may be the key)"
        ));
    }
    let key_like = value.split('_').any(|run| {
        run.len() >= KEY_LIKE_RUN
            && run.chars().any(|c| c.is_ascii_digit())
            && run.chars().any(|c| c.is_ascii_alphabetic())
    });
    key_like.then(|| {
        format!(
            "({length} characters, a run of {KEY_LIKE_RUN} or more letters and digits) looks \
             like a key, not the name of an environment variable: write the name of the \
             variable holding the key, such as OPENROUTER_API_KEY (the value is not shown)"
        )
    })
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
    /// `drift_window` as a duration, within [`duration::DRIFT_WINDOW`] and in whole seconds:
    /// the store keeps the window in seconds, and `1999ms` silently became 1 s (tester 16
    /// F9). Refused rather than rounded, since either rounding moves which runs count for a
    /// plan; the error names the whole seconds on either side.
    pub fn drift_window(&self, origin: &str) -> Result<Option<Duration>, CoreError> {
        const FIELD: &str = "history.drift_window";
        let window = config_duration(
            origin,
            FIELD,
            self.drift_window.as_deref(),
            duration::DRIFT_WINDOW,
        )?;
        if let Some(w) = window
            && w.subsec_nanos() != 0
        {
            return Err(CoreError::Field {
                origin: origin.to_string(),
                field: FIELD.to_string(),
                problem: format!(
                    "= {} is not whole seconds (the window is kept in seconds): write {}s or {}s",
                    quoted(self.drift_window.as_deref().unwrap_or_default().trim()),
                    w.as_secs(),
                    w.as_secs() + 1
                ),
            });
        }
        Ok(window)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(key_env: &str) -> Result<Config, CoreError> {
        let text = format!(
            "[providers.keyed]\nprefix = \"keyed/\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkey_env = {}\n",
            toml::Value::String(key_env.to_string())
        );
        Config::parse(&text, "config.toml")
    }

    /// Tester 12 T12-13: the key itself written as `key_env` was echoed by the error naming
    /// the variable that is not set. Anything that is not a variable's name, or a name that
    /// reads as a key, is refused when the config is read, and the error never quotes it.
    #[test]
    fn a_key_written_as_key_env_is_refused_without_being_echoed() {
        for value in [
            "sk-proj-Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy",
            "sk-or-v1-0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
            "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0",
            "Q7vX2mPz9LkR4tYw8NcB3hJd6FgS1aUe5oIi0rTy",
            "OPENAI_API_KEY ",
            "$OPENAI_API_KEY",
            "",
            "1PASSWORD",
        ] {
            let e = parsed(value)
                .err()
                .unwrap_or_else(|| panic!("{value:?} was taken"));
            let said = e.to_string();
            assert!(
                said.starts_with("config.toml: field 'providers.keyed.key_env' "),
                "{said}"
            );
            assert!(said.contains("write the name of the variable"), "{said}");
            if value.len() > 3 {
                assert!(!said.contains(value.trim()), "{value:?} echoed: {said}");
            }
        }
        let e = parsed("a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0")
            .err()
            .unwrap();
        assert!(e.to_string().contains("(40 characters, a run of 32"), "{e}");
        // Names are taken, long ones with underscores included.
        for value in [
            "OPENROUTER_API_KEY",
            "_KEY",
            "openai_api_key_2",
            "MY_VERY_LONG_COMPANY_INTERNAL_GATEWAY_PRODUCTION_API_KEY_V2",
        ] {
            let c = parsed(value).unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!(c.key_variables(), vec![value.to_string()]);
        }
    }
}
