//! Which endpoint a model id goes to: providers from the workspace config map a prefix to an
//! OpenAI-compatible base URL and to the *name* of the environment variable holding the key.

use std::time::Duration;

use crate::core::bounds::{self, int_in};
use crate::core::config::{Config, ProviderConfig};
use crate::core::plan::PLANNER_SELF_NAMES;
use crate::core::request::Route;
use crate::core::terminal_text::{key_segment, quoted};
use crate::exit::bad_input;

/// How the client behaves, from `[llm]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub retries: u32,
    pub retry_base: Duration,
    /// The longest wait before a retry: a longer retry-after is not waited for, and the
    /// doubling backoff stops growing here.
    pub retry_max_wait: Duration,
    pub stream: bool,
    /// A reply larger than this fails as `protocol` ("reply too large"), its opening kept.
    pub max_reply_bytes: usize,
}

/// The default cap on a reply: 8 MiB.
pub const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(300),
            retries: 2,
            retry_base: Duration::from_secs(1),
            retry_max_wait: Duration::from_secs(60),
            stream: true,
            max_reply_bytes: MAX_REPLY_BYTES,
        }
    }
}

/// Where one model's calls go.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub provider: String,
    /// `{base_url}/chat/completions`.
    pub url: String,
    /// The model id as the provider knows it (the prefix removed).
    pub upstream_model: String,
    pub key_env: Option<String>,
    /// Every configured provider's key variable (this one's among them): a request body
    /// logged with `--log-bodies` holds none of their keys, where the operator's prompt
    /// holds another provider's key (tester 12 T12-6).
    pub key_envs: Vec<String>,
    pub stream: bool,
    pub settings: ClientSettings,
}

impl Endpoint {
    /// The key from the environment, at call time. The error names the variable, never a
    /// value.
    pub fn key(&self) -> anyhow::Result<Option<String>> {
        let Some(var) = &self.key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_string())),
            Ok(_) => Err(bad_input(format!(
                "provider {} reads its key from ${}, which is set but empty",
                quoted(&self.provider),
                key_segment(var)
            ))),
            Err(_) => Err(bad_input(format!(
                "provider {} reads its key from ${}, which is not set",
                quoted(&self.provider),
                key_segment(var)
            ))),
        }
    }

    /// The variable of another configured provider whose key is in one of `texts`, if any:
    /// such text is not sent here. The operator's text is sent as written — a key of the
    /// provider called goes back to where it came from — but a pasted log holding provider
    /// A's key would hand it to provider B (tester 13: seen in a briefed attachment). One
    /// check for every request that carries text to a provider: a chat request (`send`, a
    /// replay, the console) and an embeddings request (the semantic layer's question and
    /// catalog text). The key is never named, only its variable.
    ///
    /// "Holds the key" is what the redactor takes for the key (a piece of it of
    /// [`FRAGMENT`](super::redact::FRAGMENT) bytes or more, its base64 forms, through JSON
    /// escapes): the stored copy of such text says `[REDACTED]`, so sending it would leak
    /// what the record says was taken out (tester 19 F17: a key one character short, split
    /// in two or wrapped over two lines went out while history showed `[REDACTED]`).
    pub fn foreign_key_in<'t>(&self, texts: impl IntoIterator<Item = &'t str>) -> Option<String> {
        let texts: Vec<&str> = texts.into_iter().collect();
        let own = self.key().ok().flatten();
        self.key_envs
            .iter()
            .filter(|v| Some(*v) != self.key_env.as_ref())
            .find(|var| {
                std::env::var(var).ok().is_some_and(|k| {
                    let k = k.trim();
                    if own.as_deref() == Some(k) {
                        return false;
                    }
                    // A placeholder is no secret: its redactor holds nothing.
                    let redactor = super::redact::Redactor::new(Some(k));
                    texts.iter().any(|t| redactor.holds_key(t))
                })
            })
            .cloned()
    }
}

impl Providers {
    /// The endpoint a request holding `texts` is sent to for `model`, or why `send` would
    /// not send it: no provider takes the model, its key variable is unset or empty, or the
    /// request holds another provider's key ([`Endpoint::foreign_key_in`]). The one
    /// decision `send`, replays and every preview's [`Route`] share.
    pub fn sendable<'t>(
        &self,
        model: &str,
        texts: impl IntoIterator<Item = &'t str>,
    ) -> Result<Endpoint, NotSendable> {
        let endpoint = self.resolve(model).map_err(|why| NotSendable {
            endpoint: None,
            why,
        })?;
        if let Err(why) = endpoint.key() {
            return Err(NotSendable {
                endpoint: Some(Box::new(endpoint)),
                why,
            });
        }
        if let Some(var) = endpoint.foreign_key_in(texts) {
            let why = anyhow::anyhow!(
                "the request holds the key ${} holds, another provider's: it is not sent to \
                 provider {} (take it out of the prompt or the attachment)",
                key_segment(&var),
                quoted(&endpoint.provider)
            );
            return Err(NotSendable {
                endpoint: Some(Box::new(endpoint)),
                why,
            });
        }
        Ok(endpoint)
    }

    /// [`Providers::sendable`] as a preview shows it.
    pub fn route<'t>(&self, model: &str, texts: impl IntoIterator<Item = &'t str>) -> Route {
        let (endpoint, not_sent) = match self.sendable(model, texts) {
            Ok(e) => (Some(e), None),
            Err(e) => (e.endpoint.map(|e| *e), Some(crate::exit::said(&e.why))),
        };
        let key_set = endpoint
            .as_ref()
            .is_some_and(|e| matches!(e.key(), Ok(Some(_))));
        Route {
            provider: endpoint.as_ref().map(|e| e.provider.clone()),
            url: endpoint.as_ref().map(|e| e.url.clone()),
            model_sent: endpoint.as_ref().map(|e| e.upstream_model.clone()),
            key_env: endpoint.as_ref().and_then(|e| e.key_env.clone()),
            key_set,
            not_sent,
            stream: endpoint.as_ref().is_some_and(|e| e.stream),
        }
    }
}

/// Why a request is not sent, with the endpoint it would have gone to when one takes it.
#[derive(Debug)]
pub struct NotSendable {
    pub endpoint: Option<Box<Endpoint>>,
    pub why: anyhow::Error,
}

/// How many requests one send has in flight when `llm.concurrency` is not set.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// The providers of a workspace config, resolved.
#[derive(Debug, Clone)]
pub struct Providers {
    pub settings: ClientSettings,
    /// Requests one send has in flight at once (`llm.concurrency`).
    pub concurrency: usize,
    providers: Vec<(String, ProviderConfig)>,
    default_provider: Option<String>,
    pub self_names: Vec<String>,
    /// `llm.baseline_model`: the strong model the console's send also asks, unaided.
    pub baseline_model: Option<String>,
}

impl Providers {
    /// `origin` names the config in errors.
    pub fn from_config(config: &Config, origin: &str) -> anyhow::Result<Providers> {
        let d = ClientSettings::default();
        let llm = &config.llm;
        // Each duration within its bound (core::duration), named with the file and key.
        let t = llm.durations(origin)?;
        let settings = ClientSettings {
            connect_timeout: t.connect_timeout.unwrap_or(d.connect_timeout),
            timeout: t.timeout.unwrap_or(d.timeout),
            retries: llm.retries(origin)?.unwrap_or(d.retries),
            retry_base: t.retry_base.unwrap_or(d.retry_base),
            retry_max_wait: t.retry_max_wait.unwrap_or(d.retry_max_wait),
            stream: llm.stream.unwrap_or(d.stream),
            max_reply_bytes: match llm.max_reply_bytes {
                None => d.max_reply_bytes,
                Some(n) => {
                    let n = int_in(n, &bounds::REPLY_BYTES, origin, "llm.max_reply_bytes")?;
                    usize::try_from(n).unwrap_or(usize::MAX)
                }
            },
        };
        let mut providers = Vec::with_capacity(config.providers.len());
        for (name, p) in &config.providers {
            let base_url = check_base_url(
                p.base_url.trim(),
                &format!("{origin}: providers.{}.base_url", key_segment(name)),
            )?;
            providers.push((
                name.clone(),
                ProviderConfig {
                    base_url,
                    ..p.clone()
                },
            ));
        }
        if let Some(dp) = &llm.default_provider
            && !config.providers.contains_key(dp)
        {
            return Err(bad_input(format!(
                "{origin}: llm.default_provider {} is not a configured provider",
                quoted(dp)
            )));
        }
        check_prefixes(&providers, llm.default_provider.as_deref(), origin)?;
        Ok(Providers {
            settings,
            concurrency: llm
                .concurrency(origin)?
                .map_or(DEFAULT_CONCURRENCY, |n| n as usize),
            providers,
            default_provider: llm.default_provider.clone(),
            self_names: llm
                .self_names
                .clone()
                .unwrap_or_else(|| PLANNER_SELF_NAMES.iter().map(|s| s.to_string()).collect()),
            baseline_model: llm.baseline_model.clone().filter(|m| !m.trim().is_empty()),
        })
    }

    /// Every provider's key variable, each once.
    fn key_envs(&self) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> = self
            .providers
            .iter()
            .filter_map(|(_, p)| p.key_env.as_ref())
            .collect();
        names.into_iter().cloned().collect()
    }

    /// The longest matching prefix wins; an id no prefix matches goes unchanged to the
    /// default provider.
    pub fn resolve(&self, model: &str) -> anyhow::Result<Endpoint> {
        // `*` is how budgets.toml rows match many models (`openrouter/*`, the fallback `*`);
        // no provider serves a model so named, and the console lists the rows (last note:
        // its `*` row showed a route to the default provider, model '*').
        if model.contains('*') {
            return Err(bad_input(format!(
                "model {} is a budgets.toml pattern, not a model: name the model to send to",
                quoted(model)
            )));
        }
        let matched = self
            .providers
            .iter()
            .filter(|(_, p)| !p.prefix.is_empty() && model.starts_with(&p.prefix))
            .max_by_key(|(_, p)| p.prefix.len());
        let (name, p, upstream) = match matched {
            Some((name, p)) => (name, p, &model[p.prefix.len()..]),
            None => {
                let Some(dp) = &self.default_provider else {
                    return Err(bad_input(format!(
                        "no provider for model {}: add one whose prefix matches it to config.toml, or set llm.default_provider",
                        quoted(model)
                    )));
                };
                let Some((name, p)) = self.providers.iter().find(|(n, _)| n == dp) else {
                    return Err(bad_input(format!(
                        "llm.default_provider {} is not configured",
                        quoted(dp)
                    )));
                };
                (name, p, model)
            }
        };
        if upstream.is_empty() {
            return Err(bad_input(format!(
                "model {} is only the prefix of provider {}: name a model after it",
                quoted(model),
                quoted(name)
            )));
        }
        let key_envs = self.key_envs();
        // The config check refuses a key *named* in the URL (`/token=…`); one written as a
        // bare segment is found by its value, now that the variables are read: the route is
        // shown by preview and every MCP client (tester 21 F3: it printed the key whole,
        // while send, the log and the store redacted it).
        // Read with its escapes decoded too (review 49 N1, tester 50 F6: `%73k-tes%74…` is
        // the key, and the redactor needs 12 of its bytes in a row), and in any case: the URL
        // parser lower-cases a host, so a key used as a subdomain is shown lower-cased.
        let decoded = crate::core::text::percent_decoded(&p.base_url).bytes;
        let written = [
            p.base_url.to_ascii_lowercase(),
            String::from_utf8_lossy(&decoded).to_ascii_lowercase(),
        ];
        if let Some(var) = key_envs.iter().find(|var| {
            let key = std::env::var(var)
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            let secrets = super::redact::Secrets::of_keys([key.as_str()]);
            written.iter().any(|w| secrets.holds(w))
        }) {
            return Err(bad_input(format!(
                "the base_url of provider {} holds the key ${} holds: a base URL is shown, \
                 stored and logged, so give the key through key_env alone",
                quoted(name),
                key_segment(var)
            )));
        }
        Ok(Endpoint {
            provider: name.clone(),
            url: format!(
                "{}/chat/completions",
                p.base_url.trim().trim_end_matches('/')
            ),
            upstream_model: upstream.to_string(),
            key_env: p.key_env.clone(),
            key_envs,
            stream: p.stream.unwrap_or(self.settings.stream),
            settings: self.settings.clone(),
        })
    }
}

/// Every provider is reachable by a prefix of its own: an empty prefix never matches (only
/// the default provider may have one), and of two providers taking one prefix the one
/// whose name sorted last took every model, so renaming one rerouted its models without a
/// word (tester 16 F7). Both are refused, naming the providers.
fn check_prefixes(
    providers: &[(String, ProviderConfig)],
    default_provider: Option<&str>,
    origin: &str,
) -> anyhow::Result<()> {
    let field = |name: &str| format!("providers.{}.prefix", key_segment(name));
    let mut taken: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for (name, p) in providers {
        if p.prefix.is_empty() {
            if default_provider == Some(name.as_str()) {
                continue;
            }
            return Err(bad_input(format!(
                "{origin}: {} is empty, so no model id reaches this provider: give the \
                 prefix its model ids start with (e.g. {}), or name it in llm.default_provider",
                field(name),
                quoted(&format!("{name}/"))
            )));
        }
        if let Some(first) = taken.insert(&p.prefix, name) {
            return Err(bad_input(format!(
                "{origin}: {} and {} are both {}: a model id must go to one provider; give \
                 one another prefix (a provider given a sample provider's name replaces it)",
                field(first),
                field(name),
                quoted(&p.prefix)
            )));
        }
    }
    Ok(())
}

/// How the names a path segment or a `;` path parameter carries a secret under end, read
/// in lower case without `-`, `_` or `.`: `key`, `api_key`, `X-Api-Key`, `auth_token`,
/// `access-token`, `client_secret`, `Authorization` (tester 50 F6: a list of nine exact
/// names let `auth_token=` and `x-api-key=` through).
const SECRET_NAME_ENDINGS: [&str; 9] = [
    "key",
    "token",
    "auth",
    "authorization",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
];

/// Whether `name` (of `NAME=…`) names a secret: it ends as one of [`SECRET_NAME_ENDINGS`].
fn names_a_secret(name: &str) -> bool {
    let name: String = name
        .trim()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAME_ENDINGS.iter().any(|end| name.ends_with(end))
}

/// A base URL is shown, stored with every plan and logged, so it must hold no secret: no
/// `user:password@`, no query (where gateways take `?key=`; `/chat/completions` would also
/// land after it), and no path segment or `;` parameter named like a key (`/token=…`,
/// `;key=…`). The secret belongs in the variable `key_env` names. A URL holding one is
/// refused without being echoed. The scheme is case-insensitive (RFC 3986 §3.1): the URL
/// comes back as the URL parser reads it (scheme and host in lower case, dot segments
/// resolved), as it is then used; a space or control character, which the parser would drop
/// or encode behind the operator's back, is refused.
fn check_base_url(url: &str, at: &str) -> anyhow::Result<String> {
    let scheme = url
        .split_once("://")
        .map(|(s, _)| s.to_ascii_lowercase())
        .filter(|s| s == "http" || s == "https");
    let Some(scheme) = scheme else {
        return Err(bad_input(format!(
            "{at} must start with http:// or https://"
        )));
    };
    // The URL parser would drop a tab or newline and percent-encode a space or a control
    // character, so the URL shown, stored and logged would not be the one asked (tester 48
    // F2): refused, as written.
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad_input(format!(
            "{at} has a space, tab, line break or control character: write the URL as it is \
             sent (a space as %20)"
        )));
    }
    let url = format!("{scheme}{}", &url[scheme.len()..]);
    // `http:///v1` is read by the URL parser as the host `v1` (tester 49 F7): a URL with no
    // host is refused as written.
    let after_scheme = &url[scheme.len() + 3..];
    if after_scheme.starts_with(['/', '\\']) || after_scheme.is_empty() {
        return Err(bad_input(format!(
            "{at} has no host: write it as http://HOST[:PORT]/PATH"
        )));
    }
    let parsed =
        reqwest::Url::parse(&url).map_err(|e| bad_input(format!("{at} is not a URL ({e})")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad_input(format!(
            "{at} holds a user name or password (user:password@host): a base URL is shown, \
             stored and logged, so put the secret in the variable key_env names"
        )));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad_input(format!(
            "{at} has a query or fragment (?… or #…): a base URL is shown, stored and logged, \
             and the request path follows it, so give the key through key_env and the URL up \
             to its path only"
        )));
    }
    if path_holds_a_secret(parsed.path()) {
        return Err(bad_input(format!(
            "{at} has a key in its path (a segment or ;parameter named key, token, api_key, \
             auth_token, client_secret…): a base URL is shown, stored and logged, so give the key through \
             key_env"
        )));
    }
    // What the parser made of it (`/./v1/../v2` is `/v2`, a host in lower case) is what
    // every request goes to, so it is what is shown, stored and logged too.
    Ok(parsed.as_str().trim_end_matches('/').to_string())
}

/// Whether a path segment, or a `;` parameter of one, is `NAME=…` with NAME in
/// [`names_a_secret`] (`=` and `;` percent-encoded count too).
fn path_holds_a_secret(path: &str) -> bool {
    // Every escape is read, so `/%6Bey=…` names `key` as `/key=…` does (tester 49 F7).
    let decoded =
        String::from_utf8_lossy(&crate::core::text::percent_decoded(path).bytes).into_owned();
    decoded
        .split(['/', ';'])
        .filter_map(|piece| piece.split_once('='))
        .any(|(name, _)| names_a_secret(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn providers(extra: &str) -> Providers {
        let sample: Config = toml::from_str(crate::sample::SAMPLE_CONFIG).unwrap();
        let mut config = sample;
        if !extra.is_empty() {
            let over: Config = toml::from_str(extra).unwrap();
            config.providers.extend(over.providers);
            config.llm.timeout = over.llm.timeout.or(config.llm.timeout);
        }
        Providers::from_config(&config, "config.toml").unwrap()
    }

    #[test]
    fn the_longest_prefix_wins_and_unmatched_ids_go_to_the_default() {
        let p = providers(
            "[providers.free]\nprefix = \"openrouter/openrouter/\"\nbase_url = \"http://127.0.0.1:9/v1/\"\n[llm]\ntimeout = \"2s\"",
        );
        let e = p.resolve("openrouter/openrouter/free").unwrap();
        assert_eq!(
            (e.provider.as_str(), e.upstream_model.as_str()),
            ("free", "free")
        );
        assert_eq!(e.url, "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(e.settings.timeout, Duration::from_secs(2));
        let e = p.resolve("ollama/qwen3:30b-a3b").unwrap();
        assert_eq!(e.upstream_model, "qwen3:30b-a3b");
        assert_eq!(e.key_env, None);
        let e = p.resolve("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(e.provider, "openrouter");
        assert_eq!(e.upstream_model, "anthropic/claude-sonnet-4-5");
        assert_eq!(e.key_env.as_deref(), Some("OPENROUTER_API_KEY"));
        assert!(p.resolve("ollama/").is_err());
        for pattern in ["*", "openrouter/*"] {
            let err = p.resolve(pattern).unwrap_err().to_string();
            assert!(
                err.contains("is a budgets.toml pattern, not a model"),
                "{err}"
            );
        }
        assert_eq!(e.settings.max_reply_bytes, 8 * 1024 * 1024);
    }

    /// Tester 49 F7: `http:///v1` became the host `v1`; `/%6Bey=…` passed the key check.
    #[test]
    fn a_base_url_without_a_host_or_with_an_escaped_key_name_is_refused() {
        for (url, says) in [
            ("http:///v1", "has no host"),
            ("https://", "has no host"),
            ("http://127.0.0.1:9/v4/%6Bey=abc", "has a key in its path"),
            ("http://127.0.0.1:9/v1/k%65y=abc", "has a key in its path"),
            (
                "http://127.0.0.1:9/v1/a;%74oken=abc",
                "has a key in its path",
            ),
            // Tester 50 F6: names beyond nine exact words.
            ("http://h/v1/auth_token=abc", "has a key in its path"),
            ("http://h/v1/access-token=abc", "has a key in its path"),
            ("http://h/v1/X-Api-Key=abc", "has a key in its path"),
            ("http://h/v1/client_secret=abc", "has a key in its path"),
            ("http://h/v1;Authorization=abc", "has a key in its path"),
            ("http://h/v1/oauth.credentials=abc", "has a key in its path"),
        ] {
            let err = check_base_url(url, "base_url").unwrap_err().to_string();
            assert!(err.contains(says), "{url}: {err}");
        }
        // An escape that names nothing secret, and one cut short, are left as they are.
        assert!(check_base_url("http://127.0.0.1:9/v1/%7Euser/x%2", "base_url").is_ok());
        // A name that is no secret's, and `=` in a segment without one, pass.
        assert!(check_base_url("http://h/v1/model=gpt-4o/keys", "base_url").is_ok());
        assert!(check_base_url("http://h/openai/deployments/tokenizer", "base_url").is_ok());
    }

    #[test]
    fn the_reply_cap_is_read_and_a_useless_one_refused() {
        let read = |toml_text: &str| -> anyhow::Result<usize> {
            let config = Config::parse(toml_text, "config.toml")?;
            Ok(Providers::from_config(&config, "config.toml")?
                .settings
                .max_reply_bytes)
        };
        assert_eq!(read("").unwrap(), MAX_REPLY_BYTES);
        assert_eq!(read("[llm]\nmax_reply_bytes = 200000").unwrap(), 200_000);
        // Refused as the file is read, where its line is known.
        let err = read("[llm]\nmax_reply_bytes = 0").unwrap_err().to_string();
        assert_eq!(
            err,
            "config.toml: line 2, column 19: field 'llm.max_reply_bytes' is 0; expected a whole number from 1024 to 268435456"
        );
        // And by the client's settings, for a config made in code.
        let mut config = Config::default();
        config.llm.max_reply_bytes = Some(0);
        let err = Providers::from_config(&config, "config.toml")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("config.toml: field 'llm.max_reply_bytes'"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_key_names_the_variable() {
        let e = Endpoint {
            provider: "x".into(),
            url: String::new(),
            upstream_model: "m".into(),
            key_env: Some("CTXCONSOLE_SURELY_UNSET_KEY_VAR".into()),
            key_envs: Vec::new(),
            stream: false,
            settings: ClientSettings::default(),
        };
        let err = e.key().unwrap_err().to_string();
        assert!(err.contains("$CTXCONSOLE_SURELY_UNSET_KEY_VAR"), "{err}");
    }
}
