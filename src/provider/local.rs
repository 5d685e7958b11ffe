//! Finding a local model server: a short probe of Ollama and llama.cpp's server.

use std::time::Duration;

use serde_json::Value;

use super::EnvLookup;
use super::catalog::{Catalog, ModelInfo};

/// Probe timeout for local servers.
const PROBE: Duration = Duration::from_millis(300);

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    super::wire::ask_json(client.get(url), PROBE).await
}

/// Look for a local Ollama and llama.cpp server; the first model found wins.
pub(crate) async fn probe_local(env: &EnvLookup, catalog: &Catalog) -> Option<ModelInfo> {
    detect(env, catalog).await.into_iter().next()
}

/// Every model a local Ollama and llama.cpp server offer (Ollama's first), asking both at once
/// with a short timeout.
pub(crate) async fn detect(env: &EnvLookup, catalog: &Catalog) -> Vec<ModelInfo> {
    let ollama = env("OLLAMA_HOST")
        .filter(|h| !h.trim().is_empty())
        .map(|h| super::catalog::ollama_root(&h))
        .unwrap_or_else(|| "http://127.0.0.1:11434".to_string());
    let mut builder = reqwest::Client::builder().connect_timeout(PROBE).no_proxy();
    if !ollama.to_ascii_lowercase().starts_with("https://") {
        // Both servers speak plain HTTP: no root certificates to load.
        builder = builder.tls_certs_only(Vec::new());
    }
    let Ok(client) = builder.build() else {
        return Vec::new();
    };
    let llamacpp = "http://127.0.0.1:8080".to_string();
    let (tags_url, models_url) = (
        format!("{ollama}/api/tags"),
        format!("{llamacpp}/v1/models"),
    );
    let (o, l) = tokio::join!(get_json(&client, &tags_url), get_json(&client, &models_url));
    let names = |v: Option<Value>, list: &str, keys: &[&str]| -> Vec<String> {
        v.as_ref()
            .and_then(|v| v.get(list))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|m| keys.iter().find_map(|k| m.get(*k).and_then(Value::as_str)))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for (provider, ids) in [
        ("ollama", names(o, "models", &["name", "model"])),
        ("llamacpp", names(l, "data", &["id"])),
    ] {
        for id in ids {
            if let Ok((m, _)) = catalog.resolve(provider, &id) {
                found.push(m);
            }
        }
    }
    found
}
