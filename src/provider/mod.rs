//! Model providers over HTTP: Anthropic Messages, OpenAI Chat Completions (and every
//! compatible server), OpenAI Responses (on OpenAI and on Azure OpenAI), and Google Gemini.
//!
//! [`Providers`] is the loop's [`Provider`]: for each request it looks the model up in the
//! [`Catalog`], resolves the key, lets the model's wire format build the HTTP request, and
//! streams the answer through [`http::stream_call`], which turns SSE into the loop's events.
//! Wire formats live one per module and know nothing of the network; the HTTP layer knows
//! nothing of any format.

pub mod anthropic;
mod body;
pub mod catalog;
pub(crate) mod dialect;
pub(crate) mod emit;
pub(crate) mod error;
pub(crate) mod google;
pub(crate) mod http;
pub(crate) mod keys;
pub(crate) mod local;
pub(crate) mod openai_completions;
pub mod openai_responses;
pub(crate) mod origin;
pub(crate) mod sse;
pub mod subscription;
pub(crate) mod tool_template;
pub mod web;
pub(crate) mod web_search;
pub mod window;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::agent::protocol::stream::{EventStream, Provider, ProviderRequest, StreamEvent};
use catalog::{Api, Catalog, ModelInfo};
use emit::MessageStream;
use error::{KeyError, RequestError};
use http::HttpSettings;
use wire::WireApi;

/// Reads an environment variable (injectable for tests).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment.
pub(crate) fn process_env() -> EnvLookup {
    Arc::new(|k| std::env::var(k).ok())
}

/// Default for [`Providers::with_idle_timeout`]: five minutes without a complete event is a
/// dropped stream.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default for [`Providers::with_response_timeout`]: a server that sends no response headers
/// within a minute of the request is not answering.
pub(crate) const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The wire format for an API. `env` supplies the settings a format reads from the
/// environment (Azure's API version and deployment names).
pub(crate) fn wire_api(api: Api, env: &dyn Fn(&str) -> Option<String>) -> Arc<dyn WireApi> {
    match api {
        Api::AnthropicMessages => Arc::new(anthropic::AnthropicMessages),
        Api::OpenAiCompletions => Arc::new(openai_completions::ChatCompletions),
        Api::OpenAiResponses => Arc::new(openai_responses::Responses),
        Api::AzureOpenAiResponses => Arc::new(openai_responses::AzureResponses::from_env(env)),
        Api::GoogleGenerativeAi => Arc::new(google::Gemini),
    }
}

/// Every configured provider behind one [`Provider`].
pub struct Providers {
    catalog: Arc<Catalog>,
    cli_key: Option<String>,
    env: EnvLookup,
    idle_timeout: Duration,
    response_timeout: Duration,
    /// For `https://` endpoints (loads the system's root certificates once).
    client: OnceLock<Result<reqwest::Client, RequestError>>,
    /// For plain `http://` endpoints (local servers): no certificates to load.
    plain_client: OnceLock<Result<reqwest::Client, RequestError>>,
    keys: Mutex<HashMap<String, Option<String>>>,
    headers: Mutex<HashMap<String, Vec<(String, String)>>>,
    /// Learns every key and credential header resolved (for masking).
    secrets: crate::secrets::Secrets,
    /// Offer the provider's own web search where the API has one (`web_search = true`).
    web_search: bool,
    /// Sign-ins to subscriptions, whose tokens replace keys for their providers.
    subscriptions: Arc<subscription::Subscriptions>,
}

impl Providers {
    pub fn new(catalog: Arc<Catalog>, cli_key: Option<String>, env: EnvLookup) -> Self {
        Providers {
            catalog,
            cli_key,
            env,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            client: OnceLock::new(),
            plain_client: OnceLock::new(),
            keys: Mutex::new(HashMap::new()),
            headers: Mutex::new(HashMap::new()),
            secrets: crate::secrets::Secrets::default(),
            web_search: false,
            subscriptions: Arc::new(subscription::Subscriptions::none()),
        }
    }

    /// Use these sign-ins for their providers.
    #[must_use]
    pub fn with_subscriptions(mut self, subscriptions: Arc<subscription::Subscriptions>) -> Self {
        self.subscriptions = subscriptions;
        self
    }

    /// The sign-ins this provider uses.
    pub fn subscriptions(&self) -> &Arc<subscription::Subscriptions> {
        &self.subscriptions
    }

    /// The subscription a request to `provider` goes through: always for the providers that
    /// exist only by subscription; for Anthropic when signed in to Claude and no key was given
    /// with `--api-key` or in config.toml (the Node.js pi's order: a key given for the run,
    /// then `auth.json`, then the environment).
    pub(crate) fn subscription_for(&self, provider: &str) -> Option<subscription::Kind> {
        let kind = subscription::Kind::from_provider(provider)?;
        if kind.subscription_only() {
            return Some(kind);
        }
        let given = self
            .cli_key
            .as_deref()
            .is_some_and(|k| !k.trim().is_empty())
            || self
                .catalog
                .provider(provider)
                .is_some_and(|p| p.key.is_some());
        (!given && self.subscriptions.is_signed_in(kind)).then_some(kind)
    }

    /// Tell `secrets` every key and header value resolved from now on (a `!command` key is
    /// only known once it has run), so it is masked wherever it might appear.
    pub fn with_secrets(mut self, secrets: crate::secrets::Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// Offer the provider's own web search tool to models whose API has one.
    #[must_use]
    pub fn with_web_search(mut self, on: bool) -> Self {
        self.web_search = on;
        self
    }

    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The HTTP client for `url`. Plain-HTTP endpoints (Ollama, llama.cpp, vLLM on this
    /// machine) get a client without root certificates, so talking to them never pays for
    /// reading and parsing the system's certificate store, and without kept connections:
    /// llama.cpp's server closes a connection after answering without saying so, and a
    /// request sent on it would fail (and be retried after a pause); a new local connection
    /// costs next to nothing.
    fn client(&self, url: &str) -> Result<reqwest::Client, RequestError> {
        let plain = url
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"));
        let cell = if plain {
            &self.plain_client
        } else {
            &self.client
        };
        cell.get_or_init(|| {
            let mut builder = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .tcp_nodelay(true);
            if plain {
                builder = builder.tls_certs_only(Vec::new()).pool_max_idle_per_host(0);
            }
            builder
                .build()
                .map_err(|e| RequestError::Client(e.to_string()))
        })
        .clone()
    }

    /// Use `key` for `provider` from now on (a key given in `/login`).
    pub(crate) fn set_key(&self, provider: &str, key: String) {
        let mut cache = crate::sync::lock(&self.keys);
        self.secrets.add(&key);
        cache.insert(provider.to_string(), Some(key));
    }

    /// The key for a provider, resolved once (a `!command` runs once per process).
    pub(crate) fn key_for(&self, provider: &str) -> Result<Option<String>, KeyError> {
        let mut cache = crate::sync::lock(&self.keys);
        if let Some(k) = cache.get(provider) {
            return Ok(k.clone());
        }
        let Some(info) = self.catalog.provider(provider) else {
            return Ok(self.cli_key.clone());
        };
        let env = self.env.clone();
        let key = keys::resolve_key(info, self.cli_key.as_deref(), &move |k| env(k))?;
        if let Some(k) = &key {
            self.secrets.add(k);
        }
        cache.insert(provider.to_string(), key.clone());
        Ok(key)
    }

    /// The model's headers with their values resolved (once per process, like keys), and the
    /// key as a bearer token when the provider asks for that (`authHeader`).
    fn headers_for(
        &self,
        model: &ModelInfo,
        key: Option<&str>,
    ) -> Result<Vec<(String, String)>, RequestError> {
        let cache_key = format!("{}/{}", model.provider, model.id);
        let mut cache = crate::sync::lock(&self.headers);
        let mut headers = match cache.get(&cache_key) {
            Some(h) => h.clone(),
            None => {
                let env = self.env.clone();
                let lookup = move |k: &str| env(k);
                let resolved = model
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        keys::resolve_value(value, &lookup)
                            .map(|v| (name.clone(), v))
                            .map_err(|source| RequestError::Header {
                                name: name.clone(),
                                provider: model.provider.clone(),
                                source,
                            })
                    })
                    .collect::<Result<Vec<_>, RequestError>>()?;
                // A header may carry a credential (`x-api-key`, a bearer token).
                self.secrets.extend(
                    resolved
                        .iter()
                        .filter(|(n, _)| crate::secrets::is_credential_header(n))
                        .map(|(_, v)| v.strip_prefix("Bearer ").unwrap_or(v)),
                );
                cache.insert(cache_key, resolved.clone());
                resolved
            }
        };
        let bearer = self
            .catalog
            .provider(&model.provider)
            .is_some_and(|p| p.auth_header);
        if let (true, Some(k)) = (bearer, key) {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization".into(), format!("Bearer {k}")));
        }
        Ok(headers)
    }

    fn prepare(
        &self,
        request: &ProviderRequest,
    ) -> Result<(ModelInfo, Option<String>), RequestError> {
        let (mut model, _warning) = self
            .catalog
            .resolve(&request.model.provider, &request.model.id)
            .map_err(RequestError::UnknownModel)?;
        let key = self.key_for(&model.provider)?;
        model.headers = self.headers_for(&model, key.as_deref())?;
        model.compat.web_search = self.web_search && has_web_search(model.api);
        let keyless = self
            .catalog
            .provider(&model.provider)
            .is_some_and(|p| p.keyless);
        if key.is_none() && !keyless {
            let help = match self.catalog.provider(&model.provider) {
                Some(p) => keys::missing_key_help(p),
                None => format!("No API key for `{}`.", model.provider),
            };
            return Err(RequestError::MissingKey(help));
        }
        Ok((model, key))
    }
}

impl Provider for Providers {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        if let Some(kind) = self.subscription_for(&request.model.provider) {
            return self.stream_subscribed(kind, request, cancel);
        }
        let prepared = self.prepare(&request).and_then(|(model, key)| {
            let api = wire_api(model.api, &*self.env);
            let http_request = api.build(&model, &request, key.as_deref())?;
            let client = self.client(&http_request.url)?;
            Ok((model, api, http_request, client))
        });
        match prepared {
            Ok((model, api, http_request, client)) => {
                let settings = HttpSettings {
                    client,
                    idle_timeout: self.idle_timeout,
                    response_timeout: self.response_timeout,
                };
                http::stream_call(&settings, api, model, http_request, cancel)
            }
            Err(error) => failed(&self.catalog, &request, &error.to_string()),
        }
    }
}

impl Providers {
    /// A request through a subscription: the token first (refreshed if need be, which takes a
    /// round trip), then the request shaped for the service.
    fn stream_subscribed(
        &self,
        kind: subscription::Kind,
        request: ProviderRequest,
        cancel: CancellationToken,
    ) -> EventStream {
        let resolved = self
            .catalog
            .resolve(&request.model.provider, &request.model.id)
            .map_err(RequestError::UnknownModel)
            .and_then(|(mut model, _)| {
                model.headers = self.headers_for(&model, None)?;
                model.compat.web_search = self.web_search && has_web_search(model.api);
                Ok(model)
            });
        let mut model = match resolved {
            Ok(m) => m,
            Err(e) => return failed(&self.catalog, &request, &e.to_string()),
        };
        let copilot_base = self.subscriptions.endpoints().copilot_api_override();
        let subscriptions = self.subscriptions.clone();
        let catalog = self.catalog.clone();
        let api = wire_api(model.api, &*self.env);
        let plain_client = self.client("http://");
        let tls_client = self.client("https://");
        let (idle_timeout, response_timeout) = (self.idle_timeout, self.response_timeout);
        let call = async move {
            let credentials = match subscriptions.current(kind).await {
                Ok(c) => c,
                Err(e) => return failed(&catalog, &request, &e),
            };
            if kind == subscription::Kind::Copilot {
                let domain = credentials
                    .extra
                    .get("enterpriseUrl")
                    .and_then(serde_json::Value::as_str);
                model.base_url = copilot_base.unwrap_or_else(|| {
                    subscription::refresh::copilot_base_url(&credentials.access, domain)
                });
            }
            let built = api
                .build(&model, &request, Some(&credentials.access))
                .and_then(|mut http_request| {
                    subscription::shape::finish(kind, &credentials, &request, &mut http_request);
                    let plain = http_request
                        .url
                        .get(..7)
                        .is_some_and(|s| s.eq_ignore_ascii_case("http://"));
                    let client = if plain { plain_client } else { tls_client }?;
                    Ok((http_request, client))
                });
            match built {
                Ok((http_request, client)) => {
                    let settings = HttpSettings {
                        client,
                        idle_timeout,
                        response_timeout,
                    };
                    http::stream_call(&settings, api, model, http_request, cancel)
                }
                Err(e) => failed(&catalog, &request, &e.to_string()),
            }
        };
        futures::stream::once(call).flatten().boxed()
    }
}

/// A call that ends before it starts, with `message`.
fn failed(catalog: &Catalog, request: &ProviderRequest, message: &str) -> EventStream {
    let (model, _) = catalog
        .resolve(&request.model.provider, &request.model.id)
        .unwrap_or_else(|_| (fallback_model(request), None));
    let mut out = MessageStream::new(&model);
    out.fail(message, None, None);
    let events: Vec<_> = out.drain().into_iter().map(Ok::<StreamEvent, _>).collect();
    futures::stream::iter(events).boxed()
}

/// Whether the API has a web search the provider runs itself.
pub fn has_web_search(api: Api) -> bool {
    matches!(api, Api::AnthropicMessages | Api::OpenAiResponses)
}

fn fallback_model(request: &ProviderRequest) -> ModelInfo {
    ModelInfo {
        id: request.model.id.clone(),
        name: request.model.id.clone(),
        provider: request.model.provider.clone(),
        api: Api::parse(&request.model.api).unwrap_or(Api::OpenAiCompletions),
        base_url: String::new(),
        context_window: catalog::DEFAULT_CONTEXT_WINDOW,
        max_tokens: catalog::DEFAULT_MAX_TOKENS,
        reasoning: false,
        images: false,
        pricing: catalog::Pricing::default(),
        headers: Vec::new(),
        compat: catalog::Compat::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_endpoints_get_the_client_without_certificates() {
        let p = Providers::new(Arc::new(Catalog::default()), None, Arc::new(|_| None));
        assert!(
            p.client("http://127.0.0.1:11434/v1/chat/completions")
                .is_ok()
        );
        assert!(p.plain_client.get().is_some());
        assert!(
            p.client.get().is_none(),
            "no certificate store was loaded for a local server"
        );
        assert!(p.client("HTTPS://api.example.com/v1/messages").is_ok());
        assert!(p.client.get().is_some());
    }
}
