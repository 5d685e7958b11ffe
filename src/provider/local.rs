//! Finding a local model server: a short probe of Ollama and llama.cpp's server.

use std::time::Duration;

use serde_json::Value;

use super::EnvLookup;
use super::catalog::{Catalog, ModelInfo};

/// Probe timeout for local servers.
const PROBE: Duration = Duration::from_millis(300);

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    let resp = tokio::time::timeout(PROBE, client.get(url).send())
        .await
        .ok()?
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = tokio::time::timeout(PROBE, resp.bytes()).await.ok()?.ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Look for a local Ollama and llama.cpp server; the first model found wins.
pub async fn probe_local(env: &EnvLookup, catalog: &mut Catalog) -> Option<ModelInfo> {
    let ollama = env("OLLAMA_HOST")
        .filter(|h| !h.trim().is_empty())
        .map(|h| super::catalog::ollama_root(&h))
        .unwrap_or_else(|| "http://127.0.0.1:11434".to_string());
    let mut builder = reqwest::Client::builder().connect_timeout(PROBE).no_proxy();
    if !ollama.to_ascii_lowercase().starts_with("https://") {
        // Both servers speak plain HTTP: no root certificates to load.
        builder = builder.tls_certs_only(Vec::new());
    }
    let client = builder.build().ok()?;
    let llamacpp = "http://127.0.0.1:8080".to_string();
    let (tags_url, models_url) = (
        format!("{ollama}/api/tags"),
        format!("{llamacpp}/v1/models"),
    );
    let (o, l) = tokio::join!(get_json(&client, &tags_url), get_json(&client, &models_url));
    let from_ollama = o.and_then(|v| {
        v.pointer("/models/0/name")
            .or_else(|| v.pointer("/models/0/model"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if let Some(id) = from_ollama {
        return catalog.resolve("ollama", &id).ok().map(|(m, _)| m);
    }
    let from_llamacpp = l.and_then(|v| {
        v.pointer("/data/0/id")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    from_llamacpp.and_then(|id| catalog.resolve("llamacpp", &id).ok().map(|(m, _)| m))
}
