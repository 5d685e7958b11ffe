//! Azure OpenAI (`azure-openai-responses`) against the scripted HTTP server: the Responses wire
//! format at the resource's `/openai/v1/responses`, the key in `api-key`, deployment names in
//! the body, the optional `api-version`, native replay of reasoning and call items through the
//! agent loop, and Azure's error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::stream::{done, error_text};

use std::sync::Arc;

use pi::agent::protocol::stream::{LlmContext, ProviderRequest, StreamEvent, StreamOptions};
use pi::agent::protocol::thinking::Effort;
use pi::agent::protocol::tool::ToolSet;
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, Message, StopReason, UserMessage,
};
use pi::provider::catalog::{Api, Catalog};
use serde_json::{Map, Value, json};
use support::TestTool;
use support::server::{Reply, TestServer, event};

const KEY: &str = "azure-test-key-123";
const PROVIDER: &str = "azure-openai-responses";

// ---------------------------------------------------------------------------------------------
// A Responses stream as Azure writes it (the same events as OpenAI's).

#[derive(Default)]
struct Sse {
    seq: u64,
    events: Vec<support::server::Chunk>,
}

impl Sse {
    fn ev(mut self, ty: &str, data: Value) -> Self {
        let mut m = Map::new();
        m.insert("type".into(), json!(ty));
        m.insert("sequence_number".into(), json!(self.seq));
        if let Value::Object(fields) = data {
            m.extend(fields);
        }
        self.seq += 1;
        self.events.push(event(ty, &Value::Object(m)));
        self
    }

    fn response(id: &str, status: &str, usage: Value) -> Value {
        json!({"id": id, "object": "response", "created_at": 1_760_000_000, "status": status,
               "model": "gpt-5", "output": [], "usage": usage})
    }

    fn created(self, id: &str) -> Self {
        self.ev(
            "response.created",
            json!({"response": Sse::response(id, "in_progress", Value::Null)}),
        )
    }

    fn message(self, index: u64, id: &str, text: &str) -> Self {
        self.ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        )
        .ev(
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "annotations": [], "text": text}]}}),
        )
    }

    fn reasoning(self, index: u64, item: &Value, summary: &str) -> Self {
        let id = item["id"].as_str().unwrap().to_string();
        self.ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        )
        .ev(
            "response.reasoning_summary_text.delta",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": summary}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }

    fn call(self, index: u64, id: &str, call_id: &str, name: &str, args: &str) -> Self {
        self.ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": name}}),
        )
        .ev(
            "response.function_call_arguments.delta",
            json!({"item_id": id, "output_index": index, "delta": args}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": name}}),
        )
    }

    fn completed(self, id: &str, input: u64, cached: u64, output: u64) -> Self {
        let usage = json!({
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output,
        });
        self.ev(
            "response.completed",
            json!({"response": Sse::response(id, "completed", usage)}),
        )
    }

    fn reply(self) -> Reply {
        Reply::sse(self.events)
    }
}

fn text_reply(text: &str) -> Reply {
    Sse::default()
        .created("resp_t")
        .message(0, "msg_t", text)
        .completed("resp_t", 10, 0, 2)
        .reply()
}

// ---------------------------------------------------------------------------------------------
// Providers and requests.

/// Providers whose environment holds the key and `vars`; the catalogue reads the same
/// environment, as at startup.
fn providers(vars: &[(&str, String)]) -> pi::provider::Providers {
    let mut vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    vars.push(("AZURE_OPENAI_API_KEY".into(), KEY.into()));
    let lookup = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let catalog = Catalog::builtin(&lookup);
    pi::provider::Providers::new(Arc::new(catalog), None, Arc::new(lookup))
}

fn request(model_id: &str, messages: Vec<Message>) -> ProviderRequest {
    let model = Catalog::builtin(&|_| None)
        .resolve(PROVIDER, model_id)
        .unwrap()
        .0;
    ProviderRequest {
        model: model.to_model(),
        context: LlmContext {
            system_prompt: Vec::new(),
            messages: Arc::new(messages.into_iter().map(Arc::new).collect()),
            tools: Vec::new(),
        },
        options: StreamOptions::default(),
    }
}

fn user(text: &str) -> Message {
    Message::User(UserMessage::new(text))
}

/// The terminal error; also checks the key is nowhere in it.
fn failure(events: &[StreamEvent]) -> &AssistantMessage {
    support::stream::failure(events, KEY)
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[tokio::test]
async fn a_resource_root_is_served_at_openai_v1_with_the_key_in_api_key_and_the_deployment_name() {
    let server = TestServer::start(vec![text_reply("Hello")]).await;
    let providers = providers(&[
        ("AZURE_OPENAI_BASE_URL", format!("{}/", server.url)),
        (
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            "gpt-5=prod-gpt5,gpt-4o=team-4o".into(),
        ),
    ]);
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let m = done(&events);
    assert_eq!(m.text(), "Hello");
    assert_eq!(m.api, "azure-openai-responses");
    assert_eq!(m.provider, PROVIDER);
    assert_eq!(
        m.model, "gpt-5",
        "the message names the model, not the deployment"
    );
    assert_eq!(m.response_id.as_deref(), Some("resp_t"));
    // gpt-5 prices: $1.25 in, $10 out per million tokens.
    assert!((m.usage.cost.total - (10.0 * 1.25 + 2.0 * 10.0) / 1e6).abs() < 1e-12);

    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/openai/v1/responses");
    assert_eq!(r.header("api-key"), Some(KEY));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body,
        json!({
            "model": "prod-gpt5",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
        })
    );
}

#[tokio::test]
async fn a_base_url_with_a_path_is_kept_and_the_api_version_goes_in_the_query() {
    let server = TestServer::start(vec![text_reply("ok")]).await;
    let providers = providers(&[
        ("AZURE_OPENAI_BASE_URL", format!("{}/openai", server.url)),
        ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview".into()),
    ]);
    let mut req = request("gpt-4o", vec![user("hi")]);
    req.options.temperature = Some(0.3);
    done(&support::collect(&providers, req).await);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/openai/responses?api-version=2025-04-01-preview");
    assert_eq!(
        r.body["model"], "gpt-4o",
        "an unmapped model is its own deployment"
    );
    assert_eq!(r.body["temperature"], json!(0.3));
}

#[tokio::test]
async fn reasoning_and_calls_replay_natively_through_the_agent_loop() {
    let item = json!({
        "id": "rs_1",
        "type": "reasoning",
        "encrypted_content": "gAAAAB-azure-blob==",
        "summary": [{"type": "summary_text", "text": "Need the file."}],
    });
    let first = Sse::default()
        .created("resp_1")
        .reasoning(0, &item, "Need the file.")
        .call(1, "fc_1", "call_1", "read", "{\"path\":\"a.rs\"}")
        .completed("resp_1", 300, 0, 40)
        .reply();
    let second = Sse::default()
        .created("resp_2")
        .message(0, "msg_2", "Done.")
        .completed("resp_2", 400, 256, 5)
        .reply();
    let server = TestServer::start(vec![first, second]).await;
    let providers = providers(&[("AZURE_OPENAI_BASE_URL", server.url.clone())]);
    let mut config = pi::agent::engine::config::LoopConfig::new(
        Arc::new(providers),
        request("gpt-5", Vec::new()).model,
    );
    config.reasoning = Some(Effort::High);
    config.tools = Arc::new(ToolSet::new(vec![
        TestTool::echo("read")
            .schema(json!({"type": "object", "properties": {"path": {"type": "string"}}}))
            .arc(),
    ]));
    let (rec, out) = support::run(config, "read a.rs", vec![]).await;
    let out = out.unwrap_or_else(|f| panic!("run failed: {:?}", f.error));
    assert_eq!(rec.tool_results()[0].0, "call_1|fc_1");
    let last = out
        .context
        .iter()
        .rev()
        .find_map(AgentMessage::as_assistant)
        .unwrap();
    assert_eq!(last.text(), "Done.");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.usage.cache_read, 256);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/openai/v1/responses");
    assert_eq!(
        reqs[0].body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        reqs[1].body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "read a.rs"}]},
            item,
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "read ok: {\"path\":\"a.rs\"}"},
        ])
    );
}

#[tokio::test]
async fn a_configured_authorization_header_replaces_the_api_key() {
    let server = TestServer::start(vec![text_reply("ok")]).await;
    let mut catalog = Catalog::builtin(&|_| None);
    let mut info = catalog.provider(PROVIDER).unwrap().clone();
    info.base_url = server.url.clone();
    info.headers = vec![("Authorization".into(), "Bearer entra-token-xyz".into())];
    catalog.upsert_provider(info);
    let env: pi::provider::EnvLookup =
        Arc::new(|k: &str| (k == "AZURE_OPENAI_API_KEY").then(|| KEY.to_string()));
    let providers = pi::provider::Providers::new(Arc::new(catalog), None, env);
    done(&support::collect(&providers, request("gpt-5", vec![user("hi")])).await);
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer entra-token-xyz"));
    assert_eq!(r.header("api-key"), None);
}

#[tokio::test]
async fn no_endpoint_is_a_clear_error_before_any_request() {
    let providers = providers(&[]);
    let mut req = request("gpt-5", vec![user("hi")]);
    req.options.reasoning = Some(Effort::Low);
    let events = support::collect(&providers, req).await;
    let e = failure(&events);
    assert!(
        error_text(e).contains("AZURE_OPENAI_BASE_URL")
            && error_text(e).contains("AZURE_OPENAI_RESOURCE_NAME"),
        "{}",
        error_text(e)
    );
    assert!(e.transient.is_none());
}

#[tokio::test]
async fn azure_error_bodies_are_shown_with_their_status() {
    let denied = Reply::error(
        401,
        r#"{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}"#,
    );
    let missing = Reply::error(
        404,
        r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}"#,
    );
    let limited = Reply::error(
        429,
        r#"{"error":{"code":"429","message":"Requests to the Responses_Create Operation have exceeded token rate limit of your current tier. Please retry after 12 seconds."}}"#,
    )
    .header("retry-after", "12");
    let server = TestServer::start(vec![denied, missing, limited]).await;
    let providers = providers(&[("AZURE_OPENAI_BASE_URL", server.url.clone())]);

    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(401));
    assert!(e.transient.is_none());
    let (origin, text) = error_text(e).split_once("): ").unwrap();
    assert!(
        origin.starts_with(&format!("azure-openai-responses ({}", server.url)),
        "{origin}"
    );
    assert!(text.starts_with("Access denied due to invalid subscription key"));
    assert!(error_text(e).ends_with("(HTTP 401)"));

    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(404));
    assert!(error_text(e).contains("): The API deployment for this resource does not exist."));

    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.transient.as_ref().unwrap().retry_after_ms, Some(12_000));
}

#[test]
fn config_toml_accepts_an_azure_provider() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        r#"
[providers.azure-openai-responses]
base_url = "https://my-resource.openai.azure.com"

[providers.team-azure]
api = "azure-openai-responses"
base_url = "https://team.cognitiveservices.azure.com/openai/v1"
key = "TEAM_AZURE_KEY"

[[providers.team-azure.models]]
id = "gpt-5-mini"
reasoning = true
"#,
    )
    .unwrap();
    let loaded = pi::config::load(Some(dir.path()), dir.path()).unwrap();
    let mut catalog = Catalog::builtin(&|_| None);
    loaded.config.apply_to(&mut catalog).unwrap();
    let builtin = catalog.find(PROVIDER, "gpt-5").unwrap();
    assert_eq!(builtin.base_url, "https://my-resource.openai.azure.com");
    assert_eq!(builtin.api, Api::AzureOpenAiResponses);
    let team = catalog.find("team-azure", "gpt-5-mini").unwrap();
    assert_eq!(team.api, Api::AzureOpenAiResponses);
}
