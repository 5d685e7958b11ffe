//! The Google Gemini wire format against the scripted HTTP server: `streamGenerateContent`
//! chunks shaped like the real API's (`candidates`, `usageMetadata`, `modelVersion`,
//! `responseId`), request paths, the key's header and request bodies, thinking and its
//! signatures, function calls through the agent loop, finish reasons, and error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::stream::{done, error_text, kinds};

use std::sync::Arc;

use pi::agent::protocol::stream::{
    LlmContext, ProviderRequest, StreamEvent, StreamOptions, ToolChoice, ToolSpec,
};
use pi::agent::protocol::thinking::Effort;
use pi::agent::protocol::tool::ToolSet;
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, ImageContent, Message, STOP_REFUSAL, StopReason,
    TextContent, UserContent, UserMessage,
};
use pi::provider::catalog::{Catalog, ModelInfo};
use serde_json::{Value, json};
use support::TestTool;
use support::server::{Chunk, Reply, TestServer, event};

const KEY: &str = "gemini-test-key-123";
const PNG: &str = "iVBORw0KGgo=";
const FLASH: &str = "gemini-2.5-flash";

// ---------------------------------------------------------------------------------------------
// A stream as the API writes it: one `data:` line per `GenerateContentResponse`.

#[derive(Default)]
struct Sse {
    chunks: Vec<Chunk>,
    /// Usage so far, sent with every chunk as the API does.
    prompt: u64,
}

impl Sse {
    fn new(prompt_tokens: u64) -> Self {
        Sse {
            chunks: Vec::new(),
            prompt: prompt_tokens,
        }
    }

    fn data(mut self, data: Value) -> Self {
        self.chunks.push(event("", &data));
        self
    }

    fn usage(&self) -> Value {
        json!({
            "promptTokenCount": self.prompt,
            "totalTokenCount": self.prompt,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.prompt}],
        })
    }

    /// One chunk with these parts (no finish reason yet).
    fn parts(self, parts: Value) -> Self {
        let usage = self.usage();
        self.data(json!({
            "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": FLASH,
            "responseId": "resp-gem-1",
        }))
    }

    fn text(self, text: &str) -> Self {
        self.parts(json!([{"text": text}]))
    }

    /// The last chunk: these parts, the finish reason and the final usage.
    fn finish(self, parts: Value, reason: &str, usage: Value) -> Self {
        self.data(json!({
            "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": reason, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": FLASH,
            "responseId": "resp-gem-1",
        }))
    }

    fn chunk(mut self, c: Chunk) -> Self {
        self.chunks.push(c);
        self
    }

    fn reply(self) -> Reply {
        Reply::sse(self.chunks)
    }
}

fn usage(prompt: u64, cached: u64, candidates: u64, thoughts: u64) -> Value {
    let mut u = json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    });
    if cached > 0 {
        u["cachedContentTokenCount"] = json!(cached);
    }
    if thoughts > 0 {
        u["thoughtsTokenCount"] = json!(thoughts);
    }
    u
}

fn text_reply(text: &str) -> Reply {
    Sse::new(5)
        .finish(json!([{"text": text}]), "STOP", usage(5, 0, 2, 0))
        .reply()
}

// ---------------------------------------------------------------------------------------------
// Requests and results.

/// Providers with the built-in `google` provider pointed at the test server.
fn providers(server: &TestServer) -> pi::provider::Providers {
    let mut catalog = Catalog::builtin(&|_| None);
    let mut info = catalog.provider("google").unwrap().clone();
    info.base_url = format!("{}/v1beta", server.url);
    catalog.upsert_provider(info);
    let env: pi::provider::EnvLookup =
        Arc::new(|k: &str| (k == "GEMINI_API_KEY").then(|| KEY.to_string()));
    pi::provider::Providers::new(Arc::new(catalog), None, env)
}

fn catalog_model(id: &str) -> ModelInfo {
    Catalog::builtin(&|_| None)
        .find("google", id)
        .cloned()
        .expect("built-in model")
}

fn request(model_id: &str, messages: Vec<Message>) -> ProviderRequest {
    ProviderRequest {
        model: catalog_model(model_id).to_model(),
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
    let error = support::stream::failure(events, KEY);
    assert_eq!(error.stop_reason, StopReason::Error);
    error
}

async fn run_one(replies: Vec<Reply>, req: ProviderRequest) -> (TestServer, Vec<StreamEvent>) {
    let server = TestServer::start(replies).await;
    let events = support::collect(&providers(&server), req).await;
    (server, events)
}

// ---------------------------------------------------------------------------------------------
// Happy paths.

#[tokio::test]
async fn text_stream_becomes_the_loop_events_and_the_key_stays_in_its_header() {
    let reply = Sse::new(8)
        .text("Hel")
        .finish(json!([{"text": "lo"}]), "STOP", usage(8, 0, 2, 0))
        .reply();
    let (server, events) = run_one(vec![reply], request(FLASH, vec![user("hi")])).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let m = done(&events);
    assert_eq!(m.text(), "Hello");
    assert_eq!(m.stop_reason, StopReason::Stop);
    assert_eq!(m.api, "google-generative-ai");
    assert_eq!(m.provider, "google");
    assert_eq!(m.model, FLASH);
    assert_eq!(m.response_id.as_deref(), Some("resp-gem-1"));
    assert_eq!(m.usage.input, 8);
    assert_eq!(m.usage.output, 2);
    assert_eq!(m.usage.total_tokens, 10);
    // gemini-2.5-flash: $0.30 in, $2.50 out per million tokens.
    assert!((m.usage.cost.total - (8.0 * 0.3 + 2.0 * 2.5) / 1e6).abs() < 1e-12);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(!r.path.contains(KEY), "the key never goes into the URL");
    assert_eq!(r.header("x-goog-api-key"), Some(KEY));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body,
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    );
}

#[tokio::test]
async fn thinking_streams_and_its_signatures_go_back_to_the_same_model_only() {
    let first = Sse::new(20)
        .parts(json!([{"text": "**Planning**\n\nI should", "thought": true}]))
        .parts(json!([{"text": " greet.", "thought": true}]))
        .parts(json!([{"text": "Hello"}]))
        .finish(
            json!([{"text": " there.", "thoughtSignature": "c2lnbmF0dXJlLW9uZQ=="}]),
            "STOP",
            usage(20, 0, 3, 40),
        )
        .reply();
    let server = TestServer::start(vec![first, text_reply("ok"), text_reply("ok")]).await;
    let providers = providers(&server);
    let mut req = request(FLASH, vec![user("hi")]);
    req.options.reasoning = Some(Effort::High);
    let events = support::collect(&providers, req.clone()).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let m = done(&events).clone();
    assert!(matches!(
        &m.content[0],
        ContentBlock::Thinking(t) if t.thinking == "**Planning**\n\nI should greet."
    ));
    assert!(matches!(
        &m.content[1],
        ContentBlock::Text(TextContent { text, text_signature: Some(s), .. })
            if text == "Hello there." && s == "c2lnbmF0dXJlLW9uZQ=="
    ));
    assert_eq!(m.usage.output, 43, "thoughts are billed as output");
    assert_eq!(m.usage.reasoning_tokens, Some(40));
    assert_eq!(
        server.requests()[0].body["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": 24_576, "includeThoughts": true}})
    );

    // The same model gets its thought and signature back.
    let history = vec![
        Arc::new(user("hi")),
        Arc::new(Message::Assistant(m.clone())),
        Arc::new(user("and now?")),
    ];
    let mut next = req.clone();
    next.context.messages = Arc::new(history.clone());
    done(&support::collect(&providers, next).await);
    assert_eq!(
        server.requests()[1].body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [
                {"thought": true, "text": "**Planning**\n\nI should greet."},
                {"text": "Hello there.", "thoughtSignature": "c2lnbmF0dXJlLW9uZQ=="},
            ]},
            {"role": "user", "parts": [{"text": "and now?"}]},
        ])
    );

    // Another model gets plain text, no signatures.
    let mut other = request("gemini-2.5-pro", Vec::new());
    other.context.messages = Arc::new(history);
    done(&support::collect(&providers, other).await);
    let r = &server.requests()[2];
    assert_eq!(
        r.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        r.body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "**Planning**\n\nI should greet."},
            {"text": "Hello there."},
        ]})
    );
}

#[tokio::test]
async fn request_body_carries_system_instruction_tools_and_generation_config() {
    let image = ImageContent {
        data: PNG.into(),
        mime_type: "image/png".into(),
        detail: None,
    };
    let mut req = request(
        FLASH,
        vec![Message::User(UserMessage {
            content: UserContent::Blocks(vec![
                ContentBlock::text("what is this?"),
                ContentBlock::Image(image),
            ]),
            ..UserMessage::new("")
        })],
    );
    req.context.system_prompt = vec!["You are pi.".into(), " ".into(), "Be brief.".into()];
    req.context.tools = vec![ToolSpec {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file"},
                "offset": {"type": ["integer", "null"], "minimum": 1},
            },
            "required": ["path"],
            "additionalProperties": false,
        }),
    }];
    req.options.tool_choice = Some(ToolChoice::Tool("read".into()));
    req.options.max_tokens = Some(1000);
    req.options.temperature = Some(0.4);
    req.options.reasoning = Some(Effort::Low);
    req.options.disable_reasoning = true;

    let (server, events) = run_one(vec![text_reply("A PNG.")], req).await;
    assert_eq!(done(&events).text(), "A PNG.");
    assert_eq!(
        server.requests()[0].body,
        json!({
            "contents": [{"role": "user", "parts": [
                {"text": "what is this?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
            ]}],
            "systemInstruction": {"parts": [{"text": "You are pi."}, {"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{
                "name": "read",
                "description": "Read a file",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Path to the file"},
                        "offset": {"type": "integer", "minimum": 1, "nullable": true},
                    },
                    "required": ["path"],
                },
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}},
            "generationConfig": {
                "maxOutputTokens": 1000,
                "temperature": 0.4,
                "thinkingConfig": {"thinkingBudget": 0},
            },
        })
    );
}

#[tokio::test]
async fn gemini_3_asks_for_a_thinking_level_and_a_small_limit_grows_by_the_budget() {
    let server = TestServer::start(vec![text_reply("a"), text_reply("b")]).await;
    let providers = providers(&server);
    let mut req = request("gemini-3-pro-preview", vec![user("hi")]);
    req.options.reasoning = Some(Effort::Minimal);
    done(&support::collect(&providers, req).await);
    let mut req = request("gemini-2.5-pro", vec![user("hi")]);
    req.options.reasoning = Some(Effort::Medium);
    req.options.max_tokens = Some(2000);
    done(&support::collect(&providers, req).await);
    let reqs = server.requests();
    assert_eq!(
        reqs[0].body["generationConfig"],
        json!({"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true}})
    );
    assert_eq!(
        reqs[1].body["generationConfig"],
        json!({
            "maxOutputTokens": 2000 + 8192,
            "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": true},
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Through the agent loop.

#[tokio::test]
async fn agent_loop_runs_function_calls_and_sends_back_function_responses() {
    let first = Sse::new(300)
        .parts(json!([{"text": "Reading both."}]))
        .finish(
            json!([
                {"functionCall": {"name": "read", "args": {"path": "a.rs"}}, "thoughtSignature": "Y2FsbC1zaWc="},
                {"functionCall": {"name": "read", "args": {"path": "b.rs"}}},
            ]),
            "STOP",
            usage(300, 0, 25, 0),
        )
        .reply();
    let second = Sse::new(400)
        .text("Both ")
        .finish(json!([{"text": "read."}]), "STOP", usage(400, 256, 3, 0))
        .reply();
    let server = TestServer::start(vec![first, second]).await;
    let mut config = pi::agent::engine::config::LoopConfig::new(
        Arc::new(providers(&server)),
        catalog_model(FLASH).to_model(),
    );
    config.system_prompt = vec!["You are pi.".into()];
    config.tools = Arc::new(ToolSet::new(vec![
        TestTool::echo("read")
            .schema(json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false,
            }))
            .arc(),
    ]));
    let (rec, out) = support::run(config, "read a.rs and b.rs", vec![]).await;
    let out = out.unwrap_or_else(|f| panic!("run failed: {:?}", f.error));

    let results = rec.tool_results();
    assert_eq!(results.len(), 2);
    assert_ne!(results[0].0, results[1].0, "each call gets its own id");
    assert!(
        results
            .iter()
            .all(|(id, _, error)| !id.is_empty() && !error)
    );
    let calls: Vec<AssistantMessage> = out
        .context
        .iter()
        .filter_map(AgentMessage::as_assistant)
        .cloned()
        .collect();
    assert_eq!(calls[0].stop_reason, StopReason::ToolUse);
    let mut ids: Vec<&str> = calls[0].tool_calls().map(|c| c.id.as_str()).collect();
    let mut answered: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    ids.sort();
    answered.sort();
    assert_eq!(ids, answered);
    let last = calls.last().unwrap();
    assert_eq!(last.text(), "Both read.");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.usage.cache_read, 256);
    assert_eq!(last.usage.input, 144);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body["systemInstruction"],
        json!({"parts": [{"text": "You are pi."}]})
    );
    let declared = &reqs[0].body["tools"][0]["functionDeclarations"][0];
    assert_eq!(declared["name"], "read");
    assert!(declared["parameters"].get("additionalProperties").is_none());
    let contents = reqs[1].body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{contents:#?}");
    assert_eq!(contents[0]["role"], "user");
    assert_eq!(contents[1]["role"], "model");
    let model_parts = contents[1]["parts"].as_array().unwrap();
    assert_eq!(model_parts[0], json!({"text": "Reading both."}));
    assert_eq!(model_parts[1]["functionCall"]["name"], "read");
    assert_eq!(
        model_parts[1]["functionCall"]["args"]["path"],
        json!("a.rs")
    );
    assert_eq!(model_parts[1]["thoughtSignature"], "Y2FsbC1zaWc=");
    assert!(model_parts[2].get("thoughtSignature").is_none());
    assert_eq!(contents[2]["role"], "user");
    let responses = contents[2]["parts"].as_array().unwrap();
    assert_eq!(
        responses.len(),
        2,
        "both answers in one user turn, in call order"
    );
    for (part, path) in responses.iter().zip(["a.rs", "b.rs"]) {
        assert_eq!(part["functionResponse"]["name"], "read");
        let output = part["functionResponse"]["response"]["output"]
            .as_str()
            .unwrap();
        assert!(output.starts_with("read ok: "), "{output}");
        assert!(output.contains(path), "{output}");
    }
}

// ---------------------------------------------------------------------------------------------
// Stops and failures.

#[tokio::test]
async fn max_tokens_stops_for_length() {
    let reply = Sse::new(10)
        .text("Once upon")
        .finish(json!([{"text": " a"}]), "MAX_TOKENS", usage(10, 0, 16, 0))
        .reply();
    let (_server, events) = run_one(vec![reply], request(FLASH, vec![user("hi")])).await;
    let m = done(&events);
    assert_eq!(m.stop_reason, StopReason::Length);
    assert_eq!(m.text(), "Once upon a");
    assert_eq!(m.usage.output, 16);
}

#[tokio::test]
async fn a_safety_stop_is_a_refusal_with_a_clear_message() {
    let reply = Sse::new(10)
        .text("Here is how")
        .data(json!({
            "candidates": [{
                "content": {"parts": [{"text": ""}], "role": "model"},
                "finishReason": "SAFETY",
                "index": 0,
                "safetyRatings": [
                    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true},
                    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
                ],
            }],
            "usageMetadata": usage(10, 0, 3, 0),
            "modelVersion": FLASH,
            "responseId": "resp-gem-1",
        }))
        .reply();
    let (_server, events) = run_one(vec![reply], request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.is_provider_refusal());
    assert_eq!(e.stop_detail_kind(), Some(STOP_REFUSAL));
    assert_eq!(
        e.stop_details.as_ref().and_then(|d| d.category.as_deref()),
        Some("SAFETY")
    );
    assert_eq!(
        error_text(e),
        "Gemini's safety filters blocked the response (SAFETY)."
    );
    assert_eq!(e.text(), "Here is how", "the partial answer is kept");
    assert!(e.transient.is_none());
}

#[tokio::test]
async fn a_recitation_stop_and_a_blocked_prompt_are_refusals_too() {
    let recitation = Sse::new(10)
        .finish(
            json!([{"text": "It was the best"}]),
            "RECITATION",
            usage(10, 0, 4, 0),
        )
        .reply();
    let blocked = Sse::new(10)
        .data(json!({
            "promptFeedback": {
                "blockReason": "SAFETY",
                "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "HIGH"}],
            },
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10},
            "modelVersion": FLASH,
        }))
        .reply();
    let server = TestServer::start(vec![recitation, blocked]).await;
    let providers = providers(&server);
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.is_provider_refusal());
    assert!(error_text(e).contains("(RECITATION)"), "{}", error_text(e));
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.is_provider_refusal());
    assert_eq!(error_text(e), "Gemini blocked the prompt (SAFETY).");
    assert_eq!(kinds(&events), ["start", "error"]);
}

#[tokio::test]
async fn a_malformed_function_call_is_retried_and_other_stops_are_errors() {
    let malformed = Sse::new(10)
        .data(json!({
            "candidates": [{
                "content": {"parts": [], "role": "model"},
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(read(path=))",
                "index": 0,
            }],
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10},
        }))
        .reply();
    let other = Sse::new(10)
        .finish(json!([{"text": "x"}]), "OTHER", usage(10, 0, 1, 0))
        .reply();
    let server = TestServer::start(vec![malformed, other]).await;
    let providers = providers(&server);
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_some());
    assert_eq!(
        error_text(e),
        "Gemini produced a malformed function call (MALFORMED_FUNCTION_CALL): Malformed function call: print(read(path=))"
    );
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_none());
    assert!(!e.is_provider_refusal());
    assert_eq!(error_text(e), "Gemini stopped the response early (OTHER).");
}

#[tokio::test]
async fn error_statuses_show_googles_message_and_status() {
    let invalid_key = Reply::error(
        400,
        r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#,
    );
    let quota = Reply::error(
        429,
        r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}"#,
    )
    .header("retry-after", "7");
    let overloaded = Reply::error(
        503,
        r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
    );
    let server = TestServer::start(vec![invalid_key, quota, overloaded]).await;
    let providers = providers(&server);

    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(400));
    assert!(e.transient.is_none());
    assert_eq!(
        error_text(e),
        format!(
            "google ({}/v1beta/models/{FLASH}:streamGenerateContent?alt=sse): API key not \
             valid. Please pass a valid API key. (INVALID_ARGUMENT, HTTP 400)",
            server.url
        )
    );

    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(429));
    assert_eq!(e.transient.as_ref().unwrap().retry_after_ms, Some(7000));
    assert!(error_text(e).ends_with("(RESOURCE_EXHAUSTED, HTTP 429)"));

    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_some());
    assert_eq!(
        error_text(e).split_once("): ").unwrap().1,
        "The model is overloaded. Please try again later. (UNAVAILABLE, HTTP 503)"
    );
}

#[tokio::test]
async fn an_error_mid_stream_keeps_the_partial_text_and_says_whether_to_retry() {
    let with_error = |status: &str, code: u64, message: &str| {
        Sse::new(10)
            .text("Half")
            .data(json!({"error": {"code": code, "message": message, "status": status}}))
            .reply()
    };
    let server = TestServer::start(vec![
        with_error("INTERNAL", 500, "An internal error has occurred."),
        with_error(
            "INVALID_ARGUMENT",
            400,
            "Request contains an invalid argument.",
        ),
    ])
    .await;
    let providers = providers(&server);
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    let e = failure(&events);
    assert_eq!(e.text(), "Half");
    assert!(e.transient.is_some());
    assert_eq!(error_text(e), "An internal error has occurred. (INTERNAL)");
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_none());
}

#[tokio::test]
async fn a_stream_without_a_finish_reason_is_a_dropped_stream() {
    let ended = Sse::new(10).text("All there").reply();
    let cut = Sse::new(10)
        .text("Hello wor")
        .chunk(Chunk::Disconnect)
        .reply();
    let server = TestServer::start(vec![ended, cut]).await;
    let providers = providers(&server);
    for _ in 0..2 {
        let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
        let e = failure(&events);
        assert!(e.transient.is_some());
        assert!(e.stream_broken);
        assert!(
            error_text(e).starts_with("stream read error"),
            "{}",
            error_text(e)
        );
    }
}

#[tokio::test]
async fn a_missing_key_is_reported_before_any_request() {
    let server = TestServer::start(vec![text_reply("never")]).await;
    let mut catalog = Catalog::builtin(&|_| None);
    let mut info = catalog.provider("google").unwrap().clone();
    info.base_url = format!("{}/v1beta", server.url);
    catalog.upsert_provider(info);
    let providers = pi::provider::Providers::new(Arc::new(catalog), None, Arc::new(|_| None));
    let events = support::collect(&providers, request(FLASH, vec![user("hi")])).await;
    let e = failure(&events);
    assert!(
        error_text(e).contains("GEMINI_API_KEY"),
        "{}",
        error_text(e)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn config_toml_accepts_a_google_generative_ai_provider() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        r#"
[providers.my-google]
api = "google-generative-ai"
base_url = "https://generativelanguage.googleapis.com/v1beta"
key = "GEMINI_API_KEY"

[[providers.my-google.models]]
id = "gemma-3-27b-it"
context_window = 131072
"#,
    )
    .unwrap();
    let loaded = pi::config::load(Some(dir.path()), dir.path()).unwrap();
    let mut catalog = Catalog::builtin(&|_| None);
    loaded.config.apply_to(&mut catalog).unwrap();
    let m = catalog.find("my-google", "gemma-3-27b-it").unwrap();
    assert_eq!(m.api, pi::provider::catalog::Api::GoogleGenerativeAi);
    assert_eq!(m.context_window, 131_072);
}
