//! Asking a model server how large a context it really gives a model, so the footer, the
//! compaction and `/session` count against the server's window and not a guess.
//!
//! Each server kind says it somewhere else; all are asked at once and the first answer that
//! names the model (or is the server's only model) wins:
//! - llama.cpp: `/props` → `default_generation_settings.n_ctx` (or `n_ctx`), and
//!   `/v1/models` → `data[].meta.n_ctx` (the training window, `n_ctx_train`, is not what it
//!   serves);
//! - vLLM: `/v1/models` → `data[].max_model_len`;
//! - LM Studio: `/api/v0/models/{id}` → `loaded_context_length`, else `max_context_length`;
//! - Ollama: `/api/ps` → the loaded model's `context_length` (what it runs with), else
//!   `/api/show` → `num_ctx` among its parameters, else `model_info.<arch>.context_length`.
//!
//! Each answer says whether it is what the server runs the model with or only what the model
//! could take (Ollama's architecture length before the model is loaded, LM Studio's maximum);
//! the host asks again after a run for the latter.
//!
//! Nothing here blocks: a probe has a short timeout and the caller runs it off its loop.

use std::time::Duration;

use serde_json::{Value, json};

/// How long one question to the server may take.
const ASK: Duration = Duration::from_millis(1500);

/// The server's root: `base_url` without a trailing `/v1` (or `/v1/`).
pub(crate) fn root(base_url: &str) -> &str {
    let b = base_url.trim_end_matches('/');
    b.strip_suffix("/v1").unwrap_or(b)
}

pub(crate) async fn ask(req: reqwest::RequestBuilder) -> Option<Value> {
    super::wire::ask_json(req, ASK).await
}

fn positive(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).filter(|n| *n > 0)
}

/// The entry of a `/v1/models`-style list for `model`, or the only entry there is.
fn entry<'a>(list: &'a Value, model: &str) -> Option<&'a Value> {
    let items = list
        .get("data")
        .or_else(|| list.get("models"))?
        .as_array()?;
    items
        .iter()
        .find(|m| {
            ["id", "name", "model"]
                .iter()
                .any(|k| m.get(*k).and_then(Value::as_str) == Some(model))
        })
        .or_else(|| (items.len() == 1).then(|| &items[0]))
}

/// llama.cpp's `/props`.
pub(crate) fn from_llamacpp_props(props: &Value) -> Option<u64> {
    positive(props.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| positive(props.get("n_ctx")))
}

/// An OpenAI-style model list: llama.cpp's `meta.n_ctx`, vLLM's `max_model_len`.
pub(crate) fn from_model_list(list: &Value, model: &str) -> Option<u64> {
    let m = entry(list, model)?;
    positive(m.pointer("/meta/n_ctx"))
        .or_else(|| positive(m.get("max_model_len")))
        .or_else(|| positive(m.get("context_length")))
}

/// LM Studio's `/api/v0/models/{id}`.
pub(crate) fn from_lmstudio(model: &Value) -> Option<Found> {
    positive(model.get("loaded_context_length"))
        .map(Found::running)
        .or_else(|| positive(model.get("max_context_length")).map(Found::could))
}

/// Ollama's `/api/ps` (running models) for `model`.
pub(crate) fn from_ollama_ps(ps: &Value, model: &str) -> Option<u64> {
    let items = ps.get("models")?.as_array()?;
    let m = items.iter().find(|m| {
        ["name", "model"]
            .iter()
            .any(|k| m.get(*k).and_then(Value::as_str) == Some(model))
    })?;
    positive(m.get("context_length"))
}

/// Ollama's `/api/show`: a `num_ctx` the model's parameters set, else the architecture's
/// context length.
pub(crate) fn from_ollama_show(show: &Value) -> Option<Found> {
    ollama_num_ctx(show)
        .map(Found::running)
        .or_else(|| ollama_trained(show).map(Found::could))
}

/// A `num_ctx` among the model's parameters (its Modelfile): what Ollama runs it with.
fn ollama_num_ctx(show: &Value) -> Option<u64> {
    show.get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok())?
            })
        })
        .filter(|n: &u64| *n > 0)
}

/// The architecture's context length: what the model was trained for.
fn ollama_trained(show: &Value) -> Option<u64> {
    show.get("model_info")?
        .as_object()?
        .iter()
        .find(|(k, _)| k.ends_with(".context_length"))
        .and_then(|(_, v)| positive(Some(v)))
}

/// A client for short questions to the server at `base_url` (no certificates loaded for
/// plain HTTP, which is what local servers speak).
pub(crate) fn client_for(base_url: &str) -> Option<reqwest::Client> {
    let mut builder = reqwest::Client::builder().connect_timeout(ASK);
    if !base_url.to_ascii_lowercase().starts_with("https://") {
        builder = builder.tls_certs_only(Vec::new());
    }
    builder.build().ok()
}

/// `req` with the model's configured headers (a proxy in front of a local server may want
/// them).
pub(crate) fn with_headers(
    mut req: reqwest::RequestBuilder,
    headers: &[(String, String)],
) -> reqwest::RequestBuilder {
    for (k, v) in headers {
        req = req.header(k, v);
    }
    req
}

/// A window a server reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub window: u64,
    /// Whether it is what the server runs the model with. `false`: what the model could take
    /// (LM Studio's `max_context_length`, Ollama's architecture length for a model not loaded
    /// yet, which Ollama serves with its own, often smaller, default): worth asking again
    /// once the model has answered and is loaded.
    pub running: bool,
}

impl Found {
    fn running(window: u64) -> Self {
        Found {
            window,
            running: true,
        }
    }

    fn could(window: u64) -> Self {
        Found {
            window,
            running: false,
        }
    }
}

/// The window the server at `base_url` serves `model` with, if it says.
pub(crate) async fn discover(
    base_url: &str,
    model: &str,
    headers: &[(String, String)],
) -> Option<Found> {
    let client = client_for(base_url)?;
    let root = root(base_url);
    let get = |path: &str| with_headers(client.get(format!("{root}{path}")), headers);
    let show = with_headers(client.post(format!("{root}/api/show")), headers)
        .json(&json!({ "model": model }));
    let lmstudio_path = format!("/api/v0/models/{model}");
    let (props, list, lmstudio, ps, show) = tokio::join!(
        ask(get("/props")),
        ask(get("/v1/models")),
        ask(get(&lmstudio_path)),
        ask(get("/api/ps")),
        ask(show),
    );
    // What the server runs with comes before what the model could take.
    props
        .as_ref()
        .and_then(from_llamacpp_props)
        .or_else(|| list.as_ref().and_then(|l| from_model_list(l, model)))
        .map(Found::running)
        .or_else(|| lmstudio.as_ref().and_then(from_lmstudio))
        .or_else(|| {
            ps.as_ref()
                .and_then(|p| from_ollama_ps(p, model))
                .map(Found::running)
        })
        .or_else(|| show.as_ref().and_then(from_ollama_show))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_kind_says_its_window_its_own_way() {
        // Recorded from llama.cpp's server (b6xxx), trimmed.
        let props: Value = serde_json::from_str(
            r#"{"default_generation_settings":{"n_ctx":8192,"params":{"n_predict":-1}},"total_slots":1,"model_path":"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf","chat_template":"..."}"#,
        )
        .unwrap();
        assert_eq!(from_llamacpp_props(&props), Some(8192));
        let llama_models: Value = serde_json::from_str(
            r#"{"object":"list","data":[{"id":"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf","object":"model","owned_by":"llamacpp","meta":{"vocab_type":2,"n_vocab":151936,"n_ctx_train":32768,"n_ctx":8192,"n_embd":896,"n_params":494032768,"size":391710400}}]}"#,
        )
        .unwrap();
        assert_eq!(from_model_list(&llama_models, "anything"), Some(8192));
        // vLLM.
        let vllm: Value = serde_json::from_str(
            r#"{"object":"list","data":[{"id":"Qwen/Qwen2.5-Coder-7B-Instruct","object":"model","created":1733000000,"owned_by":"vllm","root":"Qwen/Qwen2.5-Coder-7B-Instruct","parent":null,"max_model_len":16384},{"id":"other","max_model_len":4096}]}"#,
        )
        .unwrap();
        assert_eq!(
            from_model_list(&vllm, "Qwen/Qwen2.5-Coder-7B-Instruct"),
            Some(16384)
        );
        assert_eq!(from_model_list(&vllm, "missing"), None);
        // LM Studio.
        let lms: Value = serde_json::from_str(
            r#"{"id":"qwen2.5-coder-7b-instruct","object":"model","type":"llm","publisher":"lmstudio-community","arch":"qwen2","state":"loaded","max_context_length":32768,"loaded_context_length":8192}"#,
        )
        .unwrap();
        assert_eq!(from_lmstudio(&lms), Some(Found::running(8192)));
        let not_loaded: Value =
            serde_json::from_str(r#"{"id":"m","state":"not-loaded","max_context_length":32768}"#)
                .unwrap();
        assert_eq!(from_lmstudio(&not_loaded), Some(Found::could(32768)));
        // Ollama: the running model, a Modelfile's num_ctx, the architecture's length.
        let ps: Value = serde_json::from_str(
            r#"{"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","size":6654289920,"context_length":4096}]}"#,
        )
        .unwrap();
        assert_eq!(from_ollama_ps(&ps, "qwen2.5-coder:7b"), Some(4096));
        assert_eq!(from_ollama_ps(&ps, "llama3:8b"), None);
        let show: Value = serde_json::from_str(
            r#"{"parameters":"stop \"<|im_end|>\"\nnum_ctx 16384","model_info":{"general.architecture":"qwen2","qwen2.context_length":32768}}"#,
        )
        .unwrap();
        assert_eq!(from_ollama_show(&show), Some(Found::running(16384)));
        let show: Value = serde_json::from_str(
            r#"{"model_info":{"general.architecture":"qwen2","qwen2.context_length":32768}}"#,
        )
        .unwrap();
        // Only what the model could take: Ollama serves it with its own default until told.
        assert_eq!(from_ollama_show(&show), Some(Found::could(32768)));
        assert_eq!(root("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
    }
}
