//! `models.json`: the Node.js pi's custom providers and models, added to the catalogue before
//! config.toml's `[providers]` (which win where both name the same provider).
//!
//! A provider names its `api`, `baseUrl`, `apiKey` and `headers` (values as literals, variable
//! names or `!command`s, resolved when a request needs them), `authHeader`, `compat` (merged over
//! the provider's own), `models` (added, or replacing a built-in model of the same id) and
//! `modelOverrides` (changes to built-in models). An API this pi does not speak skips that
//! provider or model with a warning rather than stopping pi.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::provider::catalog::{
    Api, Catalog, Compat, DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, ModelInfo, Pricing,
    ProviderInfo,
};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct File {
    providers: BTreeMap<String, NodeProvider>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct NodeProvider {
    base_url: Option<String>,
    api: Option<String>,
    api_key: Option<String>,
    headers: BTreeMap<String, String>,
    auth_header: bool,
    compat: Option<Value>,
    models: Vec<NodeModel>,
    model_overrides: BTreeMap<String, NodeModel>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct NodeModel {
    id: String,
    name: Option<String>,
    api: Option<String>,
    reasoning: Option<bool>,
    input: Option<Vec<String>>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    cost: Option<NodeCost>,
    compat: Option<Value>,
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct NodeCost {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

impl NodeCost {
    fn over(&self, base: Pricing) -> Pricing {
        Pricing {
            input: self.input.unwrap_or(base.input),
            output: self.output.unwrap_or(base.output),
            cache_read: self.cache_read.unwrap_or(base.cache_read),
            cache_write: self.cache_write.unwrap_or(base.cache_write),
        }
    }
}

/// A read `models.json`, ready to apply to a catalogue.
#[derive(Debug, Default)]
pub(crate) struct Models {
    file: Option<PathBuf>,
    providers: BTreeMap<String, NodeProvider>,
}

impl Models {}

/// Read `<agent dir>/models.json` (absent: nothing to add).
pub(crate) fn load(agent_dir: Option<&Path>) -> Result<Models, String> {
    let Some(dir) = agent_dir else {
        return Ok(Models::default());
    };
    let path = dir.join("models.json");
    let Some(value) = super::read_json(&path).map_err(|e| e.to_string())? else {
        return Ok(Models::default());
    };
    let file: File = serde_json::from_value(value)
        .map_err(|e| format!("{}: {}", path.display(), e.to_string().trim()))?;
    Ok(Models {
        file: Some(path),
        providers: file.providers,
    })
}

/// `compat` from the file laid over `base` (fields this pi does not know are ignored).
fn merged_compat(base: &Compat, over: Option<&Value>, at: &str) -> Result<Compat, String> {
    let Some(Value::Object(over)) = over else {
        return Ok(base.clone());
    };
    let mut value = serde_json::to_value(base).map_err(|e| e.to_string())?;
    if let Value::Object(b) = &mut value {
        for (k, v) in over {
            if b.contains_key(k) {
                b.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(value).map_err(|e| format!("{at}.compat: {e}"))
}

fn parse_api(name: &str) -> Option<Api> {
    Api::parse(name.trim())
}

impl Models {
    /// Add the file's providers and models to `catalog`; returns warnings.
    pub(crate) fn apply_to(&self, catalog: &mut Catalog) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        let label = self
            .file
            .as_ref()
            .map_or("models.json".to_string(), |f| f.display().to_string());
        for (name, p) in &self.providers {
            let at = format!("{label}: providers.{name}");
            let existing = catalog.provider(name).cloned();
            let api = match (&p.api, &existing) {
                (Some(a), _) => match parse_api(a) {
                    Some(api) => api,
                    None => {
                        warnings.push(format!(
                            "{at}: the `{a}` API is not one this pi speaks; provider skipped"
                        ));
                        continue;
                    }
                },
                (None, Some(e)) => e.api,
                (None, None) => Api::OpenAiCompletions,
            };
            let base_url = match (&p.base_url, &existing) {
                (Some(u), _) if !u.trim().is_empty() => u.trim().trim_end_matches('/').to_string(),
                (_, Some(e)) => e.base_url.clone(),
                (_, None) => {
                    warnings.push(format!("{at}: a new provider needs `baseUrl`; skipped"));
                    continue;
                }
            };
            let base_compat = existing
                .as_ref()
                .map(|e| e.compat.clone())
                .unwrap_or_default();
            let compat = merged_compat(&base_compat, p.compat.as_ref(), &at)?;
            let api_key = p.api_key.clone().filter(|k| !k.trim().is_empty());
            let info = ProviderInfo {
                id: name.clone(),
                api,
                base_url: base_url.clone(),
                key_env: existing.as_ref().and_then(|e| e.key_env.clone()),
                key: existing.as_ref().and_then(|e| e.key.clone()),
                auth_key: existing.as_ref().and_then(|e| e.auth_key.clone()),
                // A built-in provider moved to another address keeps needing its key; a new
                // one on this machine with no key is a local server.
                keyless: existing.as_ref().map_or(
                    api_key.is_none() && crate::config::is_local(&base_url),
                    |e| e.keyless,
                ),
                models_key: api_key,
                signed_in: existing.as_ref().is_some_and(|e| e.signed_in),
                auth_header: p.auth_header,
                headers: crate::config::overlay_headers(
                    existing
                        .as_ref()
                        .map(|e| e.headers.clone())
                        .unwrap_or_default(),
                    &p.headers,
                ),
                compat: compat.clone(),
            };
            catalog.upsert_provider(info.clone());
            for (id, o) in &p.model_overrides {
                let Some(mut m) = catalog.find(name, id).cloned() else {
                    continue;
                };
                let at = format!("{at}.modelOverrides.{id}");
                apply_fields(&mut m, o, &at)?;
                catalog.upsert_model(m);
            }
            for (i, m) in p.models.iter().enumerate() {
                let at = format!("{at}.models[{i}]");
                if m.id.trim().is_empty() {
                    warnings.push(format!("{at}: a model needs an `id`; skipped"));
                    continue;
                }
                let model_api = match &m.api {
                    Some(a) => match parse_api(a) {
                        Some(api) => api,
                        None => {
                            warnings.push(format!(
                                "{at}: the `{a}` API is not one this pi speaks; model skipped"
                            ));
                            continue;
                        }
                    },
                    None => api,
                };
                let mut model = ModelInfo {
                    id: m.id.trim().to_string(),
                    name: m.id.trim().to_string(),
                    provider: name.clone(),
                    api: model_api,
                    base_url: base_url.clone(),
                    context_window: DEFAULT_CONTEXT_WINDOW,
                    max_tokens: DEFAULT_MAX_TOKENS,
                    reasoning: false,
                    images: false,
                    pricing: Pricing::default(),
                    headers: info.headers.clone(),
                    compat: compat.clone(),
                };
                apply_fields(&mut model, m, &at)?;
                if m.context_window.is_some_and(|c| c > 0) {
                    catalog.mark_window_set(&model.provider, &model.id);
                }
                catalog.upsert_model(model);
            }
        }
        Ok(warnings)
    }
}

/// The fields a model entry or an override sets.
fn apply_fields(m: &mut ModelInfo, o: &NodeModel, at: &str) -> Result<(), String> {
    if let Some(n) = o.name.as_deref().filter(|n| !n.trim().is_empty()) {
        m.name = n.trim().to_string();
    }
    if let Some(r) = o.reasoning {
        m.reasoning = r;
    }
    if let Some(input) = &o.input {
        m.images = input.iter().any(|i| i == "image");
    }
    if let Some(c) = o.context_window.filter(|c| *c > 0) {
        m.context_window = c;
    }
    if let Some(c) = o.max_tokens.filter(|c| *c > 0) {
        m.max_tokens = c;
    }
    if let Some(cost) = &o.cost {
        m.pricing = cost.over(m.pricing);
    }
    m.compat = merged_compat(&m.compat, o.compat.as_ref(), at)?;
    m.headers = crate::config::overlay_headers(std::mem::take(&mut m.headers), &o.headers);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_dir::{temp, write};
    use super::*;

    fn catalog_with(json: &str) -> (Catalog, Vec<String>) {
        let d = temp("models");
        write(&d, "models.json", json);
        let models = load(Some(&d)).unwrap();
        let mut c = Catalog::builtin(&|_| None);
        let w = models.apply_to(&mut c).unwrap();
        (c, w)
    }

    #[test]
    fn custom_providers_and_models_join_the_catalogue() {
        let (c, w) = catalog_with(
            r#"{"providers":{"lab":{"baseUrl":"http://10.0.0.5:8000/v1/","api":"openai-completions",
                "apiKey":"LAB_KEY","authHeader":true,"headers":{"x-team":"!echo blue"},
                "compat":{"supportsDeveloperRole":false,"maxTokensField":"max_tokens","unknownFlag":1},
                "models":[{"id":"qwen3-coder","name":"Qwen3 Coder","reasoning":true,
                  "input":["text","image"],"contextWindow":262144,"maxTokens":32000,
                  "cost":{"input":0.5,"output":1}}]}}}"#,
        );
        assert!(w.is_empty(), "{w:?}");
        let p = c.provider("lab").unwrap();
        assert_eq!(p.base_url, "http://10.0.0.5:8000/v1");
        assert_eq!(p.models_key.as_deref(), Some("LAB_KEY"));
        assert!(p.auth_header);
        assert!(!p.keyless);
        let m = c.find("lab", "qwen3-coder").unwrap();
        assert_eq!(m.name, "Qwen3 Coder");
        assert!(m.reasoning && m.images);
        assert_eq!((m.context_window, m.max_tokens), (262_144, 32_000));
        assert_eq!(m.pricing.input, 0.5);
        assert_eq!(m.pricing.cache_read, 0.0);
        assert_eq!(m.headers, vec![("x-team".into(), "!echo blue".into())]);
    }

    #[test]
    fn built_in_providers_are_routed_and_their_models_overridden() {
        let (c, w) = catalog_with(
            r#"{"providers":{"anthropic":{"baseUrl":"https://proxy.example/v1",
                "modelOverrides":{"claude-haiku-4-5":{"name":"Haiku via proxy","maxTokens":1000},
                                  "no-such-model":{"name":"x"}},
                "models":[{"id":"claude-sonnet-4-5","contextWindow":1000000}]}}}"#,
        );
        assert!(w.is_empty(), "{w:?}");
        let haiku = c.find("anthropic", "claude-haiku-4-5").unwrap();
        assert_eq!(haiku.base_url, "https://proxy.example/v1");
        assert_eq!(haiku.name, "Haiku via proxy");
        assert_eq!(haiku.max_tokens, 1000);
        assert!(haiku.reasoning, "fields not overridden stay");
        assert_eq!(
            c.provider("anthropic").unwrap().key_env.as_deref(),
            Some("ANTHROPIC_API_KEY")
        );
        let sonnet = c.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.context_window, 1_000_000);
        assert!(c.find("anthropic", "no-such-model").is_none());
    }

    #[test]
    fn unknown_apis_and_incomplete_providers_are_skipped_with_a_warning() {
        let (c, w) = catalog_with(
            r#"{"providers":{"bedrock":{"api":"bedrock-converse-stream","baseUrl":"https://b"},
                "nourl":{"api":"openai-completions","models":[{"id":"m"}]},
                "local":{"baseUrl":"http://localhost:1234/v1","models":[{"id":""},{"id":"ok"}]}}}"#,
        );
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(c.provider("bedrock").is_none() && c.provider("nourl").is_none());
        assert!(
            c.provider("local").unwrap().keyless,
            "a local server without a key"
        );
        assert!(c.find("local", "ok").is_some());
    }

    #[test]
    fn wrong_types_are_errors_naming_the_file() {
        let d = temp("models-bad");
        write(
            &d,
            "models.json",
            r#"{"providers":{"x":{"models":"none"}}}"#,
        );
        let e = load(Some(&d)).unwrap_err();
        assert!(e.contains("models.json"), "{e}");
        let (_, w) = catalog_with("{}");
        assert!(w.is_empty());
    }
}
