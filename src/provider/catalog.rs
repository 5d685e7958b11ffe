//! The model catalogue: which models exist, where they live, what they cost.
//!
//! Built-in entries cover the current Anthropic, OpenAI and Google Gemini models, Azure OpenAI
//! (the OpenAI models, addressed through `AZURE_OPENAI_BASE_URL` or `AZURE_OPENAI_RESOURCE_NAME`)
//! and the usual OpenAI-compatible hosts (OpenRouter, Groq, DeepSeek, Cerebras, xAI, Mistral,
//! local Ollama and llama.cpp). Custom providers and models (from `config.toml`) are added on top;
//! overriding a built-in provider's base URL keeps its models. A model id the catalogue does not
//! know is still usable on a known provider: [`Catalog::resolve`] builds an entry with default
//! limits and says so, so new models work on the day they ship.
//!
//! The built-in providers and models are data, `catalog.toml` next to this file, compiled in
//! and parsed once, on first use; `catalog_listing.txt` records what they amount to, and a
//! test holds the two together.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::agent::protocol::stream::Model;
use crate::agent::protocol::types::{Cost, Usage};

/// The wire protocol of a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Api {
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// The Responses format on an Azure OpenAI resource (`api-key` header, deployment names).
    #[serde(rename = "azure-openai-responses")]
    AzureOpenAiResponses,
    #[serde(rename = "google-generative-ai")]
    GoogleGenerativeAi,
}

impl Api {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiCompletions => "openai-completions",
            Api::OpenAiResponses => "openai-responses",
            Api::AzureOpenAiResponses => "azure-openai-responses",
            Api::GoogleGenerativeAi => "google-generative-ai",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Api> {
        match s {
            "anthropic-messages" | "anthropic" => Some(Api::AnthropicMessages),
            "openai-completions" | "openai-chat" | "chat-completions" => {
                Some(Api::OpenAiCompletions)
            }
            "openai-responses" | "responses" => Some(Api::OpenAiResponses),
            "azure-openai-responses" | "azure-openai" | "azure" => Some(Api::AzureOpenAiResponses),
            "google-generative-ai" | "google" | "gemini" => Some(Api::GoogleGenerativeAi),
            _ => None,
        }
    }
}

/// Prices in dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Pricing {
    /// The cost of a response's usage.
    pub(crate) fn cost(&self, usage: &Usage) -> Cost {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let input = per(usage.input, self.input);
        let output = per(usage.output, self.output);
        let cache_read = per(usage.cache_read, self.cache_read);
        let cache_write = per(usage.cache_write, self.cache_write);
        Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        }
    }
}

/// Differences between OpenAI-compatible servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Compat {
    /// Send instructions as `developer` (OpenAI reasoning models) rather than `system`.
    pub supports_developer_role: bool,
    /// Accepts `reasoning_effort`.
    pub supports_reasoning_effort: bool,
    /// Sends usage in the stream when asked with `stream_options.include_usage`.
    pub supports_usage_in_streaming: bool,
    /// `max_completion_tokens` (OpenAI) or `max_tokens` (most others).
    pub max_tokens_field: String,
    /// Accepts `store: false` (Responses API).
    pub supports_store: bool,
    /// Offer the provider's own web search tool (`web_search = true`; Anthropic Messages and
    /// OpenAI Responses only). Set per request, never read from a catalogue.
    pub web_search: bool,
}

impl Default for Compat {
    fn default() -> Self {
        Compat {
            supports_developer_role: false,
            supports_reasoning_effort: false,
            supports_usage_in_streaming: true,
            max_tokens_field: "max_tokens".into(),
            supports_store: true,
            web_search: false,
        }
    }
}

impl Compat {
    fn openai() -> Self {
        Compat {
            supports_developer_role: true,
            supports_reasoning_effort: true,
            supports_usage_in_streaming: true,
            max_tokens_field: "max_completion_tokens".into(),
            supports_store: true,
            web_search: false,
        }
    }
}

/// A provider: where it lives and how to reach it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderInfo {
    pub id: String,
    pub api: Api,
    pub base_url: String,
    /// Environment variable holding the key.
    pub key_env: Option<String>,
    /// A key given in config.toml (literal, env var name or `!command`, resolved by `keys`).
    pub key: Option<String>,
    /// The Node.js pi's `auth.json` entry for this provider (same forms as `key`).
    pub auth_key: Option<String>,
    /// The Node.js pi's `models.json` `apiKey` (same forms; tried after the environment).
    pub models_key: Option<String>,
    /// Also send the key as `Authorization: Bearer …` (`authHeader` in `models.json`).
    pub auth_header: bool,
    /// Extra headers; values take the same forms as keys and are resolved per request.
    pub headers: Vec<(String, String)>,
    pub compat: Compat,
    /// Local servers need no key.
    pub keyless: bool,
    /// Signed in to the provider's subscription (`auth.json`), which stands for a key.
    pub signed_in: bool,
}

/// Everything known about one model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub api: Api,
    pub base_url: String,
    pub context_window: u64,
    pub max_tokens: u64,
    pub reasoning: bool,
    pub images: bool,
    pub pricing: Pricing,
    pub headers: Vec<(String, String)>,
    pub compat: Compat,
}

impl ModelInfo {
    /// The loop's view of the model.
    pub fn to_model(&self) -> Model {
        Model {
            id: self.id.clone(),
            provider: self.provider.clone(),
            api: self.api.as_str().to_string(),
            reasoning: self.reasoning,
            context_window: self.context_window,
            max_tokens: self.max_tokens,
        }
    }
}

/// Defaults for a model the catalogue does not list.
pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 16_384;

#[derive(Clone, Debug, Default)]
pub struct Catalog {
    providers: Vec<ProviderInfo>,
    models: Vec<ModelInfo>,
    /// Models whose window the built-in catalogue or the configuration names (never asked of
    /// their server).
    windows_set: std::collections::HashSet<(String, String)>,
}

/// The model pi starts with for a provider that has a key and no model was named, in the order
/// providers are tried.
pub(crate) const DEFAULT_MODELS: &[(&str, &str)] = &[
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-pro"),
    ("azure-openai-responses", "gpt-5"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
    ("groq", "openai/gpt-oss-120b"),
    ("cerebras", "gpt-oss-120b"),
    ("xai", "grok-code-fast-1"),
    ("mistral", "devstral-medium-latest"),
    ("deepseek", "deepseek-chat"),
    ("openai-codex", "gpt-5.5"),
    ("github-copilot", "gpt-5.4"),
];

/// The default model of a built-in provider.
pub(crate) fn default_model(provider: &str) -> Option<&'static str> {
    DEFAULT_MODELS
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, id)| *id)
}

/// Ollama's OpenAI-compatible address from an `OLLAMA_HOST` value (`host:port` or a URL).
pub(crate) fn ollama_root(host: &str) -> String {
    let h = host.trim().trim_end_matches('/');
    if h.contains("://") {
        h.to_string()
    } else {
        format!("http://{h}")
    }
}

fn ollama_base_url(host: &str) -> String {
    format!("{}/v1", ollama_root(host))
}

/// The Azure OpenAI resource address when only `AZURE_OPENAI_RESOURCE_NAME` is set
/// (`AZURE_OPENAI_BASE_URL` wins, as a base-URL override).
fn azure_base_url(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let name = env("AZURE_OPENAI_RESOURCE_NAME")?;
    let name = name.trim();
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then(|| format!("https://{name}.openai.azure.com/openai/v1"))
}

/// The built-in catalogue as written in `catalog.toml`, compiled in.
const BUILTIN_TOML: &str = include_str!("catalog.toml");

/// `catalog.toml`: the providers, then the models in groups.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinData {
    provider: Vec<BuiltinProvider>,
    models: Vec<BuiltinGroup>,
}

/// One `[[provider]]` of `catalog.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinProvider {
    id: String,
    api: Api,
    base_url: String,
    /// The environment variable that moves the provider.
    #[serde(default)]
    base_url_env: Option<String>,
    #[serde(default)]
    key_env: Option<String>,
    #[serde(default)]
    keyless: bool,
    /// OpenAI's own request rules ([`Compat::openai`]) rather than the compatible servers'.
    #[serde(default)]
    openai_compat: bool,
}

/// One `[[models]]` group: a provider's models, listed or taken from another provider.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinGroup {
    provider: String,
    #[serde(default)]
    models_of: Option<String>,
    #[serde(default)]
    list: Vec<BuiltinModel>,
}

/// One model of a group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinModel {
    id: String,
    name: String,
    /// The model's own wire protocol, where it differs from its provider's (Copilot).
    #[serde(default)]
    api: Option<Api>,
    context: u64,
    max_out: u64,
    reasoning: bool,
    images: bool,
    /// Dollars per million tokens: input, output, cache read, cache write.
    price: [f64; 4],
}

impl BuiltinData {
    /// The models a group stands for: its own list, or the list of the group it names.
    fn models_of<'a>(&'a self, group: &'a BuiltinGroup) -> &'a [BuiltinModel] {
        match &group.models_of {
            Some(other) => self
                .models
                .iter()
                .find(|g| &g.provider == other && g.models_of.is_none())
                .map_or(&[], |g| g.list.as_slice()),
            None => &group.list,
        }
    }
}

/// Read `catalog.toml`, checking what serde cannot: that every group names a provider (and a
/// listed group, for `models_of`) and no provider or model is there twice.
fn parse_builtin(text: &str) -> Result<BuiltinData, String> {
    let data: BuiltinData = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut providers = std::collections::HashSet::new();
    for p in &data.provider {
        if !providers.insert(p.id.as_str()) {
            return Err(format!("provider `{}` is listed twice", p.id));
        }
    }
    let mut models = std::collections::HashSet::new();
    for g in &data.models {
        if !providers.contains(g.provider.as_str()) {
            return Err(format!("models for unknown provider `{}`", g.provider));
        }
        if let Some(other) = &g.models_of {
            let listed = data
                .models
                .iter()
                .any(|o| &o.provider == other && o.models_of.is_none());
            if !listed || !g.list.is_empty() {
                return Err(format!(
                    "`{}` takes the models of `{other}`, which lists none (or lists its own too)",
                    g.provider
                ));
            }
        }
        for m in data.models_of(g) {
            if !models.insert((g.provider.as_str(), m.id.as_str())) {
                return Err(format!("model `{}/{}` is listed twice", g.provider, m.id));
            }
        }
    }
    Ok(data)
}

/// The built-in catalogue's data, parsed on first use.
static BUILTIN: LazyLock<Result<BuiltinData, String>> =
    LazyLock::new(|| parse_builtin(BUILTIN_TOML));

fn builtin_data() -> &'static BuiltinData {
    match &*BUILTIN {
        Ok(data) => data,
        // Not reachable by input: the file is compiled in, and a test parses it.
        Err(e) => panic!("the compiled-in model catalogue (catalog.toml) is broken: {e}"),
    }
}

impl Catalog {
    /// The built-in catalogue. `env` reads environment variables (base-URL overrides).
    pub fn builtin(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let data = builtin_data();
        let mut c = Catalog::default();
        for p in &data.provider {
            let id = p.id.as_str();
            let base_url = p
                .base_url_env
                .as_deref()
                .and_then(env)
                .filter(|u| !u.trim().is_empty())
                .map(|u| {
                    if id == "ollama" {
                        ollama_base_url(&u)
                    } else {
                        u
                    }
                })
                .or_else(|| match id {
                    "azure-openai-responses" => azure_base_url(env),
                    _ => None,
                })
                .unwrap_or_else(|| p.base_url.clone());
            c.providers.push(ProviderInfo {
                id: p.id.clone(),
                api: p.api,
                base_url: base_url.trim_end_matches('/').to_string(),
                key_env: p.key_env.clone(),
                key: None,
                auth_key: None,
                models_key: None,
                auth_header: false,
                headers: Vec::new(),
                compat: if p.openai_compat {
                    Compat::openai()
                } else {
                    Compat::default()
                },
                keyless: p.keyless,
                signed_in: false,
            });
        }
        for group in &data.models {
            // A subscription's models join when it is signed in to (add_subscription_models).
            let by_subscription = super::subscription::Kind::from_provider(&group.provider)
                .is_some_and(super::subscription::Kind::subscription_only);
            if !by_subscription {
                c.add_group(data, group);
            }
        }
        c
    }

    /// The built-in models of `group`, with its provider's address and settings.
    fn add_group(&mut self, data: &BuiltinData, group: &BuiltinGroup) {
        let Some(p) = self.provider(&group.provider).cloned() else {
            return;
        };
        for b in data.models_of(group) {
            self.mark_window_set(&p.id, &b.id);
            self.models.push(ModelInfo {
                id: b.id.clone(),
                name: b.name.clone(),
                provider: p.id.clone(),
                api: b.api.unwrap_or(p.api),
                base_url: p.base_url.clone(),
                context_window: b.context,
                max_tokens: b.max_out,
                reasoning: b.reasoning,
                images: b.images,
                pricing: Pricing {
                    input: b.price[0],
                    output: b.price[1],
                    cache_read: b.price[2],
                    cache_write: b.price[3],
                },
                headers: Vec::new(),
                compat: p.compat.clone(),
            });
        }
    }

    /// Offer the built-in models of a subscription (`openai-codex`, `github-copilot`): only
    /// once signed in to it.
    pub fn add_subscription_models(&mut self, provider: &str) {
        if self.models.iter().any(|m| m.provider == provider) {
            return;
        }
        let data = builtin_data();
        for group in data.models.iter().filter(|g| g.provider == provider) {
            self.add_group(data, group);
        }
    }

    /// `provider/id` from the built-in models of a subscription not yet offered.
    fn subscription_model(&self, provider: &str, id: &str) -> Option<ModelInfo> {
        let only = super::subscription::Kind::from_provider(provider)
            .is_some_and(super::subscription::Kind::subscription_only);
        if !only || self.models.iter().any(|m| m.provider == provider) {
            return None;
        }
        let mut with = Catalog {
            providers: self.providers.clone(),
            ..Catalog::default()
        };
        with.add_subscription_models(provider);
        with.find(provider, id).cloned()
    }

    pub(crate) fn providers(&self) -> &[ProviderInfo] {
        &self.providers
    }

    /// Note that `provider`'s subscription is signed in to (it stands for a key).
    pub(crate) fn mark_signed_in(&mut self, provider: &str) {
        if let Some(p) = self.providers.iter_mut().find(|p| p.id == provider) {
            p.signed_in = true;
        }
    }

    pub(crate) fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    pub fn provider(&self, id: &str) -> Option<&ProviderInfo> {
        self.providers.iter().find(|p| p.id == id)
    }

    /// Add or replace a provider. Models of a replaced provider follow its new address.
    pub fn upsert_provider(&mut self, info: ProviderInfo) {
        let old_api = self.provider(&info.id).map(|p| p.api);
        for m in self.models.iter_mut().filter(|m| m.provider == info.id) {
            m.base_url = info.base_url.clone();
            // A model with an API of its own (Copilot's) keeps it.
            if old_api.is_none_or(|a| a == m.api) {
                m.api = info.api;
            }
            m.headers = info.headers.clone();
            m.compat = info.compat.clone();
        }
        match self.providers.iter_mut().find(|p| p.id == info.id) {
            Some(p) => *p = info,
            None => self.providers.push(info),
        }
    }

    /// Note that the configuration names `provider/id`'s window.
    pub(crate) fn mark_window_set(&mut self, provider: &str, id: &str) {
        self.windows_set
            .insert((provider.to_string(), id.to_string()));
    }

    /// Whether the built-in catalogue or the configuration names `provider/id`'s window.
    pub fn window_set(&self, provider: &str, id: &str) -> bool {
        self.windows_set
            .contains(&(provider.to_string(), id.to_string()))
    }

    /// Add or replace a model (by provider and id).
    pub(crate) fn upsert_model(&mut self, model: ModelInfo) {
        match self
            .models
            .iter_mut()
            .find(|m| m.provider == model.provider && m.id == model.id)
        {
            Some(m) => *m = model,
            None => self.models.push(model),
        }
    }

    pub fn find(&self, provider: &str, id: &str) -> Option<&ModelInfo> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The model for `provider`/`id`. An id the catalogue does not list gets default limits on
    /// a known provider; the second value is a warning to show in that case.
    pub fn resolve(&self, provider: &str, id: &str) -> Result<(ModelInfo, Option<String>), String> {
        if let Some(m) = self.find(provider, id) {
            return Ok((m.clone(), None));
        }
        // A subscription's model, before its sign-in brought the models in (a sign-in made
        // during this run).
        if let Some(m) = self.subscription_model(provider, id) {
            return Ok((m, None));
        }
        let Some(p) = self.provider(provider) else {
            let known: Vec<&str> = self.providers.iter().map(|p| p.id.as_str()).collect();
            return Err(format!(
                "unknown provider `{provider}` (known: {})",
                known.join(", ")
            ));
        };
        let info = ModelInfo {
            id: id.to_string(),
            name: id.to_string(),
            provider: provider.to_string(),
            api: p.api,
            base_url: p.base_url.clone(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_tokens: DEFAULT_MAX_TOKENS,
            reasoning: false,
            images: false,
            pricing: Pricing::default(),
            headers: p.headers.clone(),
            compat: p.compat.clone(),
        };
        let warning = (!p.keyless).then(|| {
            format!(
                "model `{id}` is not in the catalogue for `{provider}`: using it as given with a \
                 {DEFAULT_CONTEXT_WINDOW}-token window and no price information"
            )
        });
        Ok((info, warning))
    }

    /// Models whose provider, id or name contains `search` (case-insensitive), sorted.
    pub(crate) fn search(&self, search: Option<&str>) -> Vec<&ModelInfo> {
        let needle = search.map(str::to_lowercase);
        let mut out: Vec<&ModelInfo> = self
            .models
            .iter()
            .filter(|m| match &needle {
                None => true,
                Some(n) => format!("{}/{} {}", m.provider, m.id, m.name)
                    .to_lowercase()
                    .contains(n.as_str()),
            })
            .collect();
        out.sort_by(|a, b| (&a.provider, &a.id).cmp(&(&b.provider, &b.id)));
        out
    }
}

/// A table for `pi --list-models`.
pub(crate) fn format_model_table(models: &[&ModelInfo]) -> String {
    let mut rows = vec![[
        "provider/model".to_string(),
        "context".to_string(),
        "max out".to_string(),
        "thinking".to_string(),
        "images".to_string(),
        "$/M in".to_string(),
        "$/M out".to_string(),
    ]];
    for m in models {
        let k = |n: u64| {
            if n >= 1000 {
                format!("{}K", n / 1000)
            } else {
                n.to_string()
            }
        };
        rows.push([
            format!("{}/{}", m.provider, m.id),
            k(m.context_window),
            k(m.max_tokens),
            if m.reasoning { "yes" } else { "no" }.to_string(),
            if m.images { "yes" } else { "no" }.to_string(),
            format!("{:.2}", m.pricing.input),
            format!("{:.2}", m.pricing.output),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn built_in_windows_are_known_and_unlisted_models_are_not() {
        // A known window is never asked of the server, even one equal to the default guess.
        let c = Catalog::builtin(&no_env);
        assert!(c.models.iter().all(|m| c.window_set(&m.provider, &m.id)));
        assert!(
            c.models
                .iter()
                .any(|m| m.context_window == DEFAULT_CONTEXT_WINDOW)
        );
        assert!(!c.window_set("ollama", "qwen2.5-coder:7b"));
    }

    #[test]
    fn builtin_models_resolve_and_unknown_ids_get_defaults() {
        let c = Catalog::builtin(&no_env);
        let (m, warn) = c.resolve("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(m.api, Api::AnthropicMessages);
        assert!(warn.is_none());
        let (m, warn) = c.resolve("openai", "gpt-9-turbo").unwrap();
        assert_eq!(m.context_window, DEFAULT_CONTEXT_WINDOW);
        assert!(warn.unwrap().contains("gpt-9-turbo"));
        let (_, warn) = c.resolve("ollama", "qwen3:8b").unwrap();
        assert!(warn.is_none(), "local servers list their own models");
        assert!(
            c.resolve("nowhere", "x")
                .unwrap_err()
                .contains("unknown provider")
        );
    }

    #[test]
    fn base_url_env_overrides_move_builtin_providers() {
        let env = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9/".to_string());
        let c = Catalog::builtin(&env);
        assert_eq!(
            c.find("anthropic", "claude-haiku-4-5").unwrap().base_url,
            "http://127.0.0.1:9"
        );
        assert_eq!(
            c.provider("openai").unwrap().base_url,
            "https://api.openai.com/v1"
        );
    }

    #[test]
    fn cost_follows_usage_and_prices() {
        let p = Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let u = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 2_000_000,
            cache_write: 0,
            ..Default::default()
        };
        let c = p.cost(&u);
        assert!((c.total - (3.0 + 1.5 + 0.6)).abs() < 1e-9);
    }

    #[test]
    fn search_and_table() {
        let c = Catalog::builtin(&no_env);
        let found = c.search(Some("HAIKU"));
        assert_eq!(found.len(), 1);
        let table = format_model_table(&found);
        assert!(table.starts_with("provider/model"));
        assert!(table.contains("anthropic/claude-haiku-4-5"));
    }

    #[test]
    fn overriding_a_provider_moves_its_models() {
        let mut c = Catalog::builtin(&no_env);
        let mut p = c.provider("openai").unwrap().clone();
        p.base_url = "http://proxy.local/v1".into();
        c.upsert_provider(p);
        assert_eq!(
            c.find("openai", "gpt-5").unwrap().base_url,
            "http://proxy.local/v1"
        );
    }
}

#[cfg(test)]
mod cloud_tests {
    use super::*;

    #[test]
    fn subscription_models_join_only_when_asked_and_keep_their_own_api() {
        let mut c = Catalog::builtin(&|_| None);
        assert!(c.provider("openai-codex").is_some());
        assert!(c.models().iter().all(|m| m.provider != "openai-codex"));
        assert!(c.models().iter().all(|m| m.provider != "github-copilot"));
        c.add_subscription_models("github-copilot");
        c.add_subscription_models("github-copilot");
        let (m, warning) = c.resolve("openai-codex", "gpt-5.5").unwrap();
        assert_eq!(
            (m.context_window, warning),
            (272_000, None),
            "known before the sign-in"
        );
        let claude = c.find("github-copilot", "claude-sonnet-4.5").unwrap();
        assert_eq!(claude.api, Api::AnthropicMessages);
        assert_eq!(claude.pricing.input, 0.0);
        assert_eq!(
            c.find("github-copilot", "gpt-4.1").unwrap().api,
            Api::OpenAiCompletions
        );
        assert_eq!(
            c.models()
                .iter()
                .filter(|m| m.id == "gpt-5.4" && m.provider == "github-copilot")
                .count(),
            1
        );
        let mut moved = c.provider("github-copilot").unwrap().clone();
        moved.base_url = "http://127.0.0.1:9".into();
        c.upsert_provider(moved);
        let claude = c.find("github-copilot", "claude-sonnet-4.5").unwrap();
        assert_eq!(
            claude.api,
            Api::AnthropicMessages,
            "moving the provider keeps it"
        );
        assert_eq!(claude.base_url, "http://127.0.0.1:9");
    }

    #[test]
    fn gemini_and_azure_are_built_in() {
        let c = Catalog::builtin(&|_| None);
        let google = c.provider("google").unwrap();
        assert_eq!(google.api, Api::GoogleGenerativeAi);
        assert_eq!(google.key_env.as_deref(), Some("GEMINI_API_KEY"));
        let flash = c.find("google", "gemini-2.5-flash").unwrap();
        assert!(flash.reasoning && flash.images);
        assert_eq!(flash.context_window, 1_048_576);
        let azure = c.provider("azure-openai-responses").unwrap();
        assert_eq!(azure.api, Api::AzureOpenAiResponses);
        assert_eq!(azure.base_url, "", "no address until one is configured");
        assert!(c.find("azure-openai-responses", "gpt-5").is_some());
        for api in [Api::AzureOpenAiResponses, Api::GoogleGenerativeAi] {
            assert_eq!(Api::parse(api.as_str()), Some(api));
            let json = serde_json::to_string(&api).unwrap();
            assert_eq!(json, format!("\"{}\"", api.as_str()));
        }
    }

    #[test]
    fn azure_address_comes_from_base_url_or_resource_name() {
        let env = |k: &str| (k == "AZURE_OPENAI_RESOURCE_NAME").then(|| "my-res".to_string());
        let c = Catalog::builtin(&env);
        assert_eq!(
            c.find("azure-openai-responses", "gpt-5").unwrap().base_url,
            "https://my-res.openai.azure.com/openai/v1"
        );
        let env = |k: &str| match k {
            "AZURE_OPENAI_RESOURCE_NAME" => Some("my-res".to_string()),
            "AZURE_OPENAI_BASE_URL" => Some("https://other.openai.azure.com/".to_string()),
            _ => None,
        };
        let c = Catalog::builtin(&env);
        assert_eq!(
            c.provider("azure-openai-responses").unwrap().base_url,
            "https://other.openai.azure.com"
        );
        let env = |k: &str| (k == "AZURE_OPENAI_RESOURCE_NAME").then(|| "bad/name".to_string());
        assert_eq!(
            Catalog::builtin(&env)
                .provider("azure-openai-responses")
                .unwrap()
                .base_url,
            ""
        );
    }
}

#[cfg(test)]
mod ollama_tests {
    use super::*;

    #[test]
    fn ollama_host_moves_the_ollama_provider() {
        let env = |k: &str| (k == "OLLAMA_HOST").then(|| "10.1.2.3:1234".to_string());
        let c = Catalog::builtin(&env);
        assert_eq!(
            c.provider("ollama").unwrap().base_url,
            "http://10.1.2.3:1234/v1"
        );
        assert_eq!(ollama_root("https://box:1/"), "https://box:1");
    }
}

#[cfg(test)]
mod listing_tests {
    use std::fmt::Write;

    use super::*;

    /// Everything the built-in catalogue says, a line per provider and model: the providers
    /// twice, without and with every environment variable set (to show which ones they read).
    fn listing() -> String {
        let mut out = String::new();
        let all_env = |k: &str| Some(format!("http://env/{k}"));
        let compat = |c: &Compat| {
            if *c == Compat::openai() {
                "openai"
            } else if *c == Compat::default() {
                "default"
            } else {
                "other"
            }
        };
        for env in [&no_env as &dyn Fn(&str) -> Option<String>, &all_env] {
            for p in Catalog::builtin(env).providers() {
                let _ = writeln!(
                    out,
                    "provider {} {} {:?} key_env={:?} keyless={} compat={} headers={:?}",
                    p.id,
                    p.api.as_str(),
                    p.base_url,
                    p.key_env,
                    p.keyless,
                    compat(&p.compat),
                    p.headers
                );
            }
        }
        for m in Catalog::builtin(&no_env).models() {
            let pr = &m.pricing;
            let _ = writeln!(
                out,
                "model {}/{} {:?} {} {:?} context={} max={} reasoning={} images={} \
                 price={}/{}/{}/{} compat={} headers={:?}",
                m.provider,
                m.id,
                m.name,
                m.api.as_str(),
                m.base_url,
                m.context_window,
                m.max_tokens,
                m.reasoning,
                m.images,
                pr.input,
                pr.output,
                pr.cache_read,
                pr.cache_write,
                compat(&m.compat),
                m.headers
            );
        }
        out
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn every_entry_of_the_data_file_parses() {
        let data = parse_builtin(BUILTIN_TOML).unwrap();
        let entries = BUILTIN_TOML.matches("{ id = ").count();
        let parsed: usize = data.models.iter().map(|g| g.list.len()).sum();
        assert_eq!(parsed, entries, "a model line was not read as a model");
        assert_eq!(
            data.provider.len(),
            BUILTIN_TOML.matches("[[provider]]").count()
        );
    }

    #[test]
    fn a_broken_data_file_says_what_is_wrong() {
        let provider = "[[provider]]\nid = \"p\"\napi = \"anthropic-messages\"\nbase_url = \"\"\n";
        let model = "{ id = \"m\", name = \"M\", context = 1, max_out = 1, reasoning = false, \
                     images = false, price = [0.0, 0.0, 0.0, 0.0] }";
        let group = |p: &str, list: &str| format!("[[models]]\nprovider = \"{p}\"\n{list}\n");
        let ok = format!("{provider}{}", group("p", &format!("list = [{model}]")));
        assert!(parse_builtin(&ok).is_ok(), "{:?}", parse_builtin(&ok).err());
        let cases = [
            (
                format!("{ok}[[models]]\nprovider = \"q\"\n"),
                "unknown provider `q`",
            ),
            (
                format!("models = []\n{provider}{provider}"),
                "`p` is listed twice",
            ),
            (
                format!(
                    "{provider}{}",
                    group("p", &format!("list = [{model}, {model}]"))
                ),
                "`p/m` is listed twice",
            ),
            (
                format!("{ok}[[models]]\nprovider = \"p\"\nmodels_of = \"r\"\n"),
                "takes the models of `r`",
            ),
            (ok.replace("context = 1,", "context = -1,"), "context"),
            (ok.replace("max_out", "max_output"), "max_output"),
            (ok.replace("\"anthropic-messages\"", "\"smoke\""), "smoke"),
        ];
        for (text, says) in cases {
            let err = parse_builtin(&text).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn the_built_in_list_is_the_one_recorded() {
        let now = listing();
        assert_eq!(now, include_str!("catalog_listing.txt"));
    }
}
