//! The OpenAI Responses wire format against the scripted HTTP server: streams shaped byte for
//! byte like the real API's (event names, `sequence_number`, item ids, usage), request bodies,
//! every failure class, idle streams and aborts, and one run through the agent loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::stream::{done, error_text, kinds};

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pi::agent::policy::validate::{PARSE_ERROR_KEY, RAW_JSON_KEY};
use pi::agent::protocol::stream::{
    LlmContext, Provider, ProviderRequest, StreamEvent, StreamOptions, ToolChoice, ToolSpec,
};
use pi::agent::protocol::thinking::Effort;
use pi::agent::protocol::tool::ToolSet;
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, ImageContent, Message, STOP_REFUSAL, StopReason,
    TextContent, ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use pi::provider::catalog::{Catalog, ModelInfo};
use pi::provider::openai_responses::Responses;
use pi::provider::wire::WireApi;
use serde_json::{Map, Value, json};
use support::server::{Chunk, Reply, TestServer, event, raw_data};
use support::{TestTool, http_providers};
use tokio_util::sync::CancellationToken;

const KEY: &str = "test-key-123";
const PNG: &str = "iVBORw0KGgo=";

// ---------------------------------------------------------------------------------------------
// A stream as the API writes it.

/// Builds an SSE body: every event gets `type` first and a running `sequence_number`.
#[derive(Default)]
struct Sse {
    seq: u64,
    chunks: Vec<Chunk>,
}

impl Sse {
    fn new() -> Self {
        Sse::default()
    }

    fn ev(mut self, ty: &str, data: Value) -> Self {
        let mut m = Map::new();
        m.insert("type".into(), json!(ty));
        m.insert("sequence_number".into(), json!(self.seq));
        if let Value::Object(fields) = data {
            m.extend(fields);
        }
        self.seq += 1;
        self.chunks.push(event(ty, &Value::Object(m)));
        self
    }

    fn chunk(mut self, c: Chunk) -> Self {
        self.chunks.push(c);
        self
    }

    fn response(id: &str, status: &str, extra: Value) -> Value {
        let mut r = json!({
            "id": id,
            "object": "response",
            "created_at": 1_760_000_000,
            "status": status,
            "model": "gpt-5-2025-08-07",
            "output": [],
            "usage": null,
        });
        if let (Value::Object(r), Value::Object(extra)) = (&mut r, extra) {
            r.extend(extra);
        }
        r
    }

    fn created(self, id: &str) -> Self {
        self.ev(
            "response.created",
            json!({"response": Sse::response(id, "in_progress", json!({}))}),
        )
        .ev(
            "response.in_progress",
            json!({"response": Sse::response(id, "in_progress", json!({}))}),
        )
    }

    /// An output message streamed in `parts`.
    fn message(self, index: u64, id: &str, parts: &[&str]) -> Self {
        let text: String = parts.concat();
        let mut s = self
            .ev(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
            )
            .ev(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}}),
            );
        for p in parts {
            s = s.ev(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": p, "logprobs": []}),
            );
        }
        s.ev(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
        )
        .ev(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": text}}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "completed", "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}], "role": "assistant"}}),
        )
    }

    /// A reasoning item with summary parts (each streamed in pieces) and encrypted content.
    fn reasoning(self, index: u64, item: &Value, parts: &[&[&str]]) -> Self {
        let id = item["id"].as_str().unwrap_or_default().to_string();
        let mut s = self.ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        for (i, pieces) in parts.iter().enumerate() {
            let text: String = pieces.concat();
            s = s.ev(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": i, "part": {"type": "summary_text", "text": ""}}),
            );
            for p in *pieces {
                s = s.ev(
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": i, "delta": p}),
                );
            }
            s = s
                .ev(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": index, "summary_index": i, "text": text}),
                )
                .ev(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": index, "summary_index": i, "part": {"type": "summary_text", "text": text}}),
                );
        }
        s.ev(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }

    fn call_added(self, index: u64, id: &str, call_id: &str, name: &str) -> Self {
        self.ev(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": name}}),
        )
    }

    fn call_delta(self, index: u64, id: &str, delta: &str) -> Self {
        self.ev(
            "response.function_call_arguments.delta",
            json!({"item_id": id, "output_index": index, "delta": delta}),
        )
    }

    fn call_done(self, index: u64, id: &str, call_id: &str, name: &str, args: &str) -> Self {
        self.ev(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": index, "arguments": args}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": name}}),
        )
    }

    /// A whole function call whose arguments arrive in `fragments`.
    fn call(self, index: u64, id: &str, call_id: &str, name: &str, fragments: &[&str]) -> Self {
        let mut s = self.call_added(index, id, call_id, name);
        for f in fragments {
            s = s.call_delta(index, id, f);
        }
        s.call_done(index, id, call_id, name, &fragments.concat())
    }

    fn completed(self, id: &str, usage: Value) -> Self {
        self.ev(
            "response.completed",
            json!({"response": Sse::response(id, "completed", json!({"usage": usage}))}),
        )
    }

    fn reply(self) -> Reply {
        Reply::sse(self.chunks)
    }
}

fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output,
    })
}

fn text_reply(text: &str) -> Reply {
    Sse::new()
        .created("resp_t")
        .message(0, "msg_t", &[text])
        .completed("resp_t", usage(10, 0, 2, 0))
        .reply()
}

// ---------------------------------------------------------------------------------------------
// Requests and results.

fn catalog_model(id: &str) -> ModelInfo {
    Catalog::builtin(&|_| None)
        .find("openai", id)
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

fn png() -> ImageContent {
    ImageContent {
        data: PNG.into(),
        mime_type: "image/png".into(),
        detail: None,
    }
}

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

/// The terminal error; also checks the key is nowhere in it.
fn failure(events: &[StreamEvent]) -> &AssistantMessage {
    let error = support::stream::failure(events, KEY);
    assert_eq!(error.stop_reason, StopReason::Error);
    error
}

async fn run_one(replies: Vec<Reply>, req: ProviderRequest) -> (TestServer, Vec<StreamEvent>) {
    let server = TestServer::start(replies).await;
    let providers = http_providers(&server, "openai");
    let events = support::collect(&providers, req).await;
    (server, events)
}

// ---------------------------------------------------------------------------------------------
// Happy paths.

#[tokio::test]
async fn text_stream_becomes_the_exact_loop_events() {
    let reply = Sse::new()
        .created("resp_1")
        .message(0, "msg_abc", &["Hel", "lo"])
        .completed("resp_1", usage(12, 0, 2, 0))
        .reply();
    let (server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
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
    assert_eq!(m.response_id.as_deref(), Some("resp_1"));
    assert_eq!(m.api, "openai-responses");
    assert_eq!(m.model, "gpt-5");
    assert!(matches!(
        &m.content[0],
        ContentBlock::Text(TextContent { text_signature: Some(s), .. }) if s == "msg_abc"
    ));
    assert!(matches!(
        &events[4],
        StreamEvent::TextEnd { content_index: 0, content, signature: Some(s) }
            if content == "Hello" && s == "msg_abc"
    ));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/responses");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &reqs[0].body;
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["stream"], true);
    assert!(body.get("instructions").is_none(), "no system prompt");
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert!(body.get("reasoning").is_none(), "no effort asked for");
    assert_eq!(
        body["input"],
        json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
    );
}

#[tokio::test]
async fn reasoning_summaries_stream_and_the_encrypted_item_is_replayed_verbatim() {
    let item = json!({
        "id": "rs_1",
        "type": "reasoning",
        "encrypted_content": "gAAAAABo-encrypted-blob==",
        "summary": [
            {"type": "summary_text", "text": "**Planning** the answer"},
            {"type": "summary_text", "text": "Checking"},
        ],
    });
    let first = Sse::new()
        .created("resp_1")
        .reasoning(0, &item, &[&["**Planning**", " the answer"], &["Checking"]])
        .message(1, "msg_1", &["Done."])
        .completed("resp_1", usage(50, 0, 40, 32))
        .reply();
    let server = TestServer::start(vec![first, text_reply("ok")]).await;
    let providers = http_providers(&server, "openai");
    let mut req = request("gpt-5", vec![user("hi")]);
    req.options.reasoning = Some(Effort::High);
    let events = support::collect(&providers, req.clone()).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let m = done(&events).clone();
    let ContentBlock::Thinking(t) = &m.content[0] else {
        panic!("no thinking block: {:?}", m.content)
    };
    assert_eq!(t.thinking, "**Planning** the answer\n\nChecking");
    assert_eq!(t.item_id.as_deref(), Some("rs_1"));
    let sig: Value = serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(sig, item, "the whole reasoning item is the signature");
    assert_eq!(m.usage.reasoning_tokens, Some(32));

    // The next request replays the reasoning item unchanged, before the answer it led to.
    let mut next = req.clone();
    next.context.messages = Arc::new(vec![
        Arc::new(user("hi")),
        Arc::new(Message::Assistant(m.clone())),
        Arc::new(user("and now?")),
    ]);
    let events = support::collect(&providers, next).await;
    done(&events);
    let body = &server.requests()[1].body;
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["store"], false);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            item,
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}], "status": "completed"},
            {"role": "user", "content": [{"type": "input_text", "text": "and now?"}]},
        ])
    );

    // Another model cannot read this reasoning: it is left out.
    let mut other = request(
        "gpt-5-mini",
        vec![user("hi"), Message::Assistant(m), user("and now?")],
    );
    other.options.reasoning = Some(Effort::Low);
    let built = Responses
        .build(&catalog_model("gpt-5-mini"), &other, Some(KEY))
        .unwrap();
    let input = built.body["input"].as_array().unwrap();
    assert!(input.iter().all(|i| i["type"] != "reasoning"), "{input:?}");
    assert_eq!(input.len(), 3);
}

#[tokio::test]
async fn parallel_function_calls_assemble_interleaved_argument_fragments() {
    let reply = Sse::new()
        .created("resp_2")
        .call_added(0, "fc_a", "call_a", "read")
        .call_added(1, "fc_b", "call_b", "grep")
        .call_delta(0, "fc_a", "{\"pa")
        .call_delta(1, "fc_b", "{\"pattern\":")
        .call_delta(0, "fc_a", "th\":\"a.rs\"}")
        .call_delta(1, "fc_b", "\"fn main\"}")
        .call_done(0, "fc_a", "call_a", "read", "{\"path\":\"a.rs\"}")
        .call_done(1, "fc_b", "call_b", "grep", "{\"pattern\":\"fn main\"}")
        .completed("resp_2", usage(100, 0, 30, 0))
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("look")])).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "toolcall_start",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end",
            "toolcall_end",
            "done"
        ]
    );
    let deltas: Vec<(usize, &str)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta {
                content_index,
                delta,
            } => Some((*content_index, delta.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [
            (0, "{\"pa"),
            (1, "{\"pattern\":"),
            (0, "th\":\"a.rs\"}"),
            (1, "\"fn main\"}")
        ]
    );
    let m = done(&events);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    let calls: Vec<(&str, &str, &Value)> = m
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a|fc_a", "read", &json!({"path": "a.rs"})),
            ("call_b|fc_b", "grep", &json!({"pattern": "fn main"})),
        ]
    );
}

#[tokio::test]
async fn usage_subtracts_cached_tokens_and_costs_follow_gpt5_prices() {
    let reply = Sse::new()
        .created("resp_3")
        .message(0, "msg_3", &["ok"])
        .completed("resp_3", usage(20_000, 15_000, 3_000, 1_200))
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let u = &done(&events).usage;
    assert_eq!(u.input, 5_000);
    assert_eq!(u.cache_read, 15_000);
    assert_eq!(u.cache_write, 0);
    assert_eq!(u.output, 3_000);
    assert_eq!(u.reasoning_tokens, Some(1_200));
    assert_eq!(u.total_tokens, 23_000);
    // gpt-5: $1.25 in, $10 out, $0.125 cached, per million tokens.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(u.cost.input, 5_000.0 * 1.25 / 1e6), "{:?}", u.cost);
    assert!(close(u.cost.cache_read, 15_000.0 * 0.125 / 1e6));
    assert!(close(u.cost.output, 3_000.0 * 10.0 / 1e6));
    assert!(close(u.cost.total, 0.00625 + 0.001875 + 0.03));
}

// ---------------------------------------------------------------------------------------------
// Request bodies.

#[tokio::test]
async fn request_body_carries_instructions_tools_effort_and_paired_history() {
    let assistant = {
        let mut a = AssistantMessage::empty("openai-responses", "openai", "gpt-5");
        a.content = vec![
            ContentBlock::Text(TextContent {
                text: "Reading it.".into(),
                text_signature: Some("msg_7".into()),
                ..Default::default()
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "call_1|fc_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.png"}),
                intent: None,
                thought_signature: None,
            }),
        ];
        a.stop_reason = StopReason::ToolUse;
        a
    };
    let result = ToolResultMessage {
        tool_call_id: "call_1|fc_1".into(),
        tool_name: "read".into(),
        content: vec![
            ContentBlock::text("binary file"),
            ContentBlock::Image(png()),
        ],
        details: None,
        is_error: false,
        useless: false,
        timestamp: 1,
    };
    let mut req = request(
        "gpt-5",
        vec![
            Message::User(UserMessage {
                content: UserContent::Blocks(vec![
                    ContentBlock::text("look"),
                    ContentBlock::Image(png()),
                ]),
                ..UserMessage::new("")
            }),
            Message::Assistant(assistant),
            Message::ToolResult(result),
            user("thanks"),
        ],
    );
    req.context.system_prompt = vec!["You are pi.".into(), "  ".into(), "Be brief.".into()];
    req.context.tools = vec![read_tool()];
    req.options.reasoning = Some(Effort::High);
    req.options.tool_choice = Some(ToolChoice::Tool("read".into()));
    req.options.max_tokens = Some(4096);
    req.options.temperature = Some(0.2);

    let (server, events) = run_one(vec![text_reply("fine")], req).await;
    done(&events);
    let r = &server.requests()[0];
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let image = json!({"type": "input_image", "detail": "auto", "image_url": format!("data:image/png;base64,{PNG}")});
    let expected = json!({
        "model": "gpt-5",
        "instructions": "You are pi.\n\nBe brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "look"}, image]},
            {"type": "message", "id": "msg_7", "role": "assistant", "content": [{"type": "output_text", "text": "Reading it."}], "status": "completed"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.png\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "binary file\n(image attached below)"},
            {"role": "user", "content": [{"type": "input_text", "text": "Image(s) returned by the tool call(s) above:"}, image]},
            {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
        ],
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "tools": [{
            "type": "function",
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "strict": false,
        }],
        "tool_choice": {"type": "function", "name": "read"},
        "max_output_tokens": 4096,
        "reasoning": {"effort": "high", "summary": "auto"},
    });
    assert_eq!(r.body, expected, "no temperature for a reasoning model");
    assert!(!r.body.to_string().contains(KEY) && !r.path.contains(KEY));
}

fn built(model_id: &str, options: StreamOptions, tools: Vec<ToolSpec>) -> Value {
    let mut req = request(model_id, vec![user("hi")]);
    req.options = options;
    req.context.tools = tools;
    Responses
        .build(&catalog_model(model_id), &req, Some(KEY))
        .unwrap()
        .body
}

#[test]
fn efforts_tool_choices_and_sampling_map_per_model() {
    let effort = |model: &str, e: Option<Effort>, off: bool| {
        built(
            model,
            StreamOptions {
                reasoning: e,
                disable_reasoning: off,
                ..Default::default()
            },
            vec![],
        )
        .get("reasoning")
        .cloned()
    };
    let e = |s: &str| Some(json!({"effort": s, "summary": "auto"}));
    assert_eq!(effort("gpt-5", Some(Effort::Minimal), false), e("minimal"));
    assert_eq!(effort("gpt-5", Some(Effort::Medium), false), e("medium"));
    assert_eq!(effort("gpt-5", Some(Effort::Xhigh), false), e("high"));
    assert_eq!(effort("gpt-5", Some(Effort::Max), false), e("high"));
    assert_eq!(effort("gpt-5.1", Some(Effort::Minimal), false), e("low"));
    assert_eq!(effort("o3", Some(Effort::Minimal), false), e("low"));
    // Reasoning off: the least each family accepts.
    assert_eq!(
        effort("gpt-5", Some(Effort::High), true),
        Some(json!({"effort": "minimal"}))
    );
    assert_eq!(
        effort("gpt-5.1", None, true),
        Some(json!({"effort": "none"}))
    );
    assert_eq!(
        effort("o4-mini", None, true),
        Some(json!({"effort": "low"}))
    );

    // A model without reasoning gets temperature and no reasoning fields at all.
    let b = built(
        "gpt-4.1",
        StreamOptions {
            reasoning: Some(Effort::High),
            temperature: Some(0.3),
            ..Default::default()
        },
        vec![],
    );
    assert_eq!(b["temperature"], 0.3);
    assert!(b.get("reasoning").is_none() && b.get("include").is_none());
    assert_eq!(b["store"], false);

    let choice = |c: ToolChoice| {
        built(
            "gpt-5",
            StreamOptions {
                tool_choice: Some(c),
                ..Default::default()
            },
            vec![read_tool()],
        )["tool_choice"]
            .clone()
    };
    assert_eq!(choice(ToolChoice::Auto), "auto");
    assert_eq!(choice(ToolChoice::None), "none");
    assert_eq!(choice(ToolChoice::Required), "required");
    assert_eq!(choice(ToolChoice::Any), "required");
    // Without tools there is nothing to choose from.
    let b = built(
        "gpt-5",
        StreamOptions {
            tool_choice: Some(ToolChoice::Required),
            ..Default::default()
        },
        vec![],
    );
    assert!(b.get("tool_choice").is_none() && b.get("tools").is_none());

    // A server without `store` support is not sent it.
    let mut m = catalog_model("gpt-5");
    m.compat.supports_store = false;
    let b = Responses
        .build(&m, &request("gpt-5", vec![user("x")]), None)
        .unwrap();
    assert!(b.body.get("store").is_none());
    assert!(b.headers.iter().all(|(k, _)| k != "authorization"));
}

#[test]
fn foreign_history_is_replayed_without_provider_ids() {
    // An Anthropic turn: its thinking is dropped, its tool call keeps only the call id.
    let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-sonnet-4-5");
    a.content = vec![
        ContentBlock::Thinking(pi::agent::protocol::types::ThinkingContent {
            thinking: "hmm".into(),
            thinking_signature: Some("EqQBCkgIARABGAIiQ".into()),
            item_id: None,
        }),
        ContentBlock::Text(TextContent {
            text: "Sure.".into(),
            text_signature: Some("msg_from_elsewhere".into()),
            ..Default::default()
        }),
        ContentBlock::ToolCall(ToolCall {
            id: "toolu_01|fc_9".into(),
            name: "read".into(),
            arguments: json!({}),
            intent: None,
            thought_signature: None,
        }),
    ];
    let req = request(
        "gpt-5",
        vec![
            user("hi"),
            Message::Assistant(a),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "toolu_01|fc_9".into(),
                tool_name: "read".into(),
                content: vec![],
                details: None,
                is_error: true,
                useless: false,
                timestamp: 1,
            }),
        ],
    );
    let body = Responses
        .build(&catalog_model("gpt-5"), &req, Some(KEY))
        .unwrap()
        .body;
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sure."}], "status": "completed"},
            {"type": "function_call", "call_id": "toolu_01", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "toolu_01", "output": "(no output)"},
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Failures.

#[tokio::test]
async fn rate_limit_429_is_transient_and_honours_retry_after() {
    let reply = Reply::error(
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-5 in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
    )
    .header("retry-after", "7");
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    assert_eq!(kinds(&events), ["error"]);
    let e = failure(&events);
    assert_eq!(e.error_status, Some(429));
    assert_eq!(
        e.transient.as_ref().and_then(|t| t.retry_after_ms),
        Some(7_000)
    );
    assert!(
        error_text(e).contains("/v1/responses): Rate limit reached for gpt-5")
            && error_text(e).ends_with("(HTTP 429)"),
        "{}",
        error_text(e)
    );
}

#[tokio::test]
async fn server_error_500_is_transient() {
    let reply = Reply::error(
        500,
        r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#,
    );
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(500));
    assert!(e.transient.is_some());
    assert!(error_text(e).ends_with(
        "/v1/responses): The server had an error while processing your request. Sorry about \
         that! (HTTP 500)"
    ));
}

#[tokio::test]
async fn client_errors_are_final_and_show_the_providers_message_and_status() {
    let bad = Reply::error(
        400,
        r#"{"error":{"message":"Invalid value: 'xhigh'. Supported values are: 'minimal', 'low', 'medium', and 'high'.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_value"}}"#,
    );
    // OpenAI masks the key it quotes; the full key must not show up anywhere.
    let unauthorized = Reply::error(
        401,
        r#"{"error":{"message":"Incorrect API key provided: test-key***123. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
    );
    let server = TestServer::start(vec![bad, unauthorized]).await;
    let providers = http_providers(&server, "openai");
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(400));
    assert!(e.transient.is_none());
    assert_eq!(
        error_text(e),
        format!(
            "openai ({}/v1/responses): Invalid value: 'xhigh'. Supported values are: \
             'minimal', 'low', 'medium', and 'high'. (HTTP 400)",
            server.url
        )
    );
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert_eq!(e.error_status, Some(401));
    assert!(e.transient.is_none());
    assert!(error_text(e).contains("/v1/responses): Incorrect API key provided: test-key***123."));
    assert!(error_text(e).ends_with("(HTTP 401)"));
}

#[tokio::test]
async fn response_failed_ends_with_the_servers_error_and_keeps_partial_text() {
    let failed = |code: &str, message: &str| {
        Sse::new()
            .created("resp_f")
            .ev(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": "msg_f", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
            )
            .ev(
                "response.output_text.delta",
                json!({"item_id": "msg_f", "output_index": 0, "content_index": 0, "delta": "Partial", "logprobs": []}),
            )
            .ev(
                "response.failed",
                json!({"response": Sse::response("resp_f", "failed", json!({"error": {"code": code, "message": message}}))}),
            )
            .reply()
    };
    let server = TestServer::start(vec![
        failed(
            "server_error",
            "An error occurred while processing your request.",
        ),
        failed("invalid_prompt", "Invalid prompt: flagged."),
    ])
    .await;
    let providers = http_providers(&server, "openai");
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    let e = failure(&events);
    assert_eq!(e.text(), "Partial");
    assert!(e.transient.is_some(), "a server error is retried");
    assert_eq!(
        error_text(e),
        "An error occurred while processing your request. (server_error)"
    );
    assert_eq!(e.response_id.as_deref(), Some("resp_f"));

    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_none(), "an invalid prompt is final");
    assert_eq!(error_text(e), "Invalid prompt: flagged. (invalid_prompt)");
}

#[tokio::test]
async fn error_events_mid_stream_are_classified() {
    let with_error = |data: Value| {
        Sse::new()
            .created("resp_e")
            .message(0, "msg_e", &["Half"])
            .ev("error", data)
            .reply()
    };
    let server = TestServer::start(vec![
        with_error(
            json!({"code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 1s.", "param": null}),
        ),
        with_error(
            json!({"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model.", "param": "input"}),
        ),
    ])
    .await;
    let providers = http_providers(&server, "openai");
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_some());
    assert_eq!(e.text(), "Half");
    assert!(error_text(e).contains("Rate limit reached"));
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_none());
    assert_eq!(
        error_text(e),
        "Your input exceeds the context window of this model. (context_length_exceeded)"
    );
}

#[tokio::test]
async fn incomplete_responses_stop_for_length_or_as_a_content_filter_refusal() {
    let incomplete = |reason: &str| {
        Sse::new()
            .created("resp_i")
            .ev(
                "response.output_item.added",
                json!({"output_index": 0, "item": {"id": "msg_i", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
            )
            .ev(
                "response.output_text.delta",
                json!({"item_id": "msg_i", "output_index": 0, "content_index": 0, "delta": "Once upon", "logprobs": []}),
            )
            .ev(
                "response.incomplete",
                json!({"response": Sse::response("resp_i", "incomplete", json!({"incomplete_details": {"reason": reason}, "usage": usage(10, 0, 16, 0)}))}),
            )
            .reply()
    };
    let server = TestServer::start(vec![
        incomplete("max_output_tokens"),
        incomplete("content_filter"),
    ])
    .await;
    let providers = http_providers(&server, "openai");
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let m = done(&events);
    assert_eq!(m.stop_reason, StopReason::Length);
    assert_eq!(m.text(), "Once upon");
    assert_eq!(m.usage.output, 16);
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.is_provider_refusal());
    assert_eq!(e.stop_detail_kind(), Some(STOP_REFUSAL));
    assert!(e.transient.is_none());
}

#[tokio::test]
async fn disconnect_mid_stream_is_transient_and_keeps_the_partial_text() {
    let reply = Sse::new()
        .created("resp_d")
        .ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "msg_d", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        )
        .ev(
            "response.output_text.delta",
            json!({"item_id": "msg_d", "output_index": 0, "content_index": 0, "delta": "Hello wor", "logprobs": []}),
        )
        .chunk(Chunk::Disconnect)
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    assert_eq!(
        kinds(&events),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    let e = failure(&events);
    assert_eq!(e.text(), "Hello wor");
    assert!(e.transient.is_some());
    assert!(
        error_text(e).starts_with("stream read error"),
        "{}",
        error_text(e)
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_completion_is_a_dropped_stream() {
    // Body closed cleanly, but `response.completed` never came.
    let reply = Sse::new()
        .created("resp_x")
        .message(0, "msg_x", &["All there"])
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_some());
    assert_eq!(e.text(), "All there");
}

#[tokio::test]
async fn malformed_sse_json_is_a_clear_final_error() {
    let reply = Sse::new()
        .created("resp_m")
        .chunk(raw_data(
            r#"{"type":"response.output_text.delta","delta": oops}"#,
        ))
        .chunk(Chunk::Stall)
        .reply();
    let start = Instant::now();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_none());
    assert!(
        error_text(e).starts_with("the provider sent a malformed event"),
        "{}",
        error_text(e)
    );
    assert!(error_text(e).contains("oops"));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "ends at once, not at the idle timeout"
    );
}

#[tokio::test]
async fn invalid_function_arguments_become_the_parse_error_sentinel() {
    let reply = Sse::new()
        .created("resp_p")
        .call(0, "fc_p", "call_p", "read", &["{\"path\": ", "\"a.rs\""])
        .completed("resp_p", usage(10, 0, 5, 0))
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let m = done(&events);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    let call = m.tool_calls().next().unwrap();
    assert_eq!(call.id, "call_p|fc_p");
    assert!(call.arguments.get(PARSE_ERROR_KEY).is_some(), "{call:?}");
    assert_eq!(call.arguments[RAW_JSON_KEY], "{\"path\": \"a.rs\"");
}

#[tokio::test]
async fn an_idle_stream_fails_transiently_after_the_idle_timeout() {
    let reply = Sse::new()
        .created("resp_s")
        .message(0, "msg_s", &["Hi"])
        .chunk(Chunk::Stall)
        .reply();
    let server = TestServer::start(vec![reply]).await;
    let providers = http_providers(&server, "openai").with_idle_timeout(Duration::from_millis(200));
    let start = Instant::now();
    let events = support::collect(&providers, request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.transient.is_some());
    assert_eq!(e.text(), "Hi");
    assert!(
        error_text(e).contains("no complete event from the provider"),
        "{}",
        error_text(e)
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test]
async fn abort_mid_stream_closes_the_connection_at_once() {
    let reply = Sse::new()
        .created("resp_a")
        .ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "msg_a", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        )
        .ev(
            "response.output_text.delta",
            json!({"item_id": "msg_a", "output_index": 0, "content_index": 0, "delta": "Working", "logprobs": []}),
        )
        .chunk(Chunk::Stall)
        .reply();
    let server = TestServer::start(vec![reply]).await;
    let providers = http_providers(&server, "openai");
    let cancel = CancellationToken::new();
    let mut stream = providers.stream(request("gpt-5", vec![user("hi")]), cancel.clone());
    loop {
        match stream.next().await {
            Some(Ok(StreamEvent::TextDelta { .. })) => break,
            Some(Ok(_)) => {}
            other => panic!("stream ended before any text: {other:?}"),
        }
    }
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(2), async {
        let mut n = 0;
        while stream.next().await.is_some() {
            n += 1;
        }
        n
    })
    .await
    .expect("the stream ends after cancel");
    assert!(rest <= 1, "no more content after the abort");
    let waited = Instant::now();
    while server.close_delays().is_empty() && waited.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let delays = server.close_delays();
    assert_eq!(delays.len(), 1, "the server saw the connection close");
    assert!(delays[0] < Duration::from_millis(100), "{:?}", delays[0]);
}

// ---------------------------------------------------------------------------------------------
// Through the agent loop.

#[tokio::test]
async fn agent_loop_runs_a_tool_call_then_answers_over_http() {
    let first = Sse::new()
        .created("resp_l1")
        .call(0, "fc_1", "call_1", "read", &["{\"path\":", "\"a.rs\"}"])
        .completed("resp_l1", usage(300, 0, 20, 0))
        .reply();
    let second = Sse::new()
        .created("resp_l2")
        .message(0, "msg_l2", &["All ", "done."])
        .completed("resp_l2", usage(400, 256, 5, 0))
        .reply();
    let server = TestServer::start(vec![first, second]).await;
    let providers = http_providers(&server, "openai");
    let mut config = pi::agent::engine::config::LoopConfig::new(
        Arc::new(providers),
        catalog_model("gpt-5").to_model(),
    );
    config.system_prompt = vec!["You are pi.".into()];
    config.tools = Arc::new(ToolSet::new(vec![
        TestTool::echo("read")
            .schema(json!({"type": "object", "properties": {"path": {"type": "string"}}}))
            .arc(),
    ]));
    let (rec, out) = support::run(config, "read a.rs", vec![]).await;
    let out = out.unwrap_or_else(|f| panic!("run failed: {:?}", f.error));

    assert_eq!(
        rec.tool_results(),
        [(
            "call_1|fc_1".to_string(),
            "read ok: {\"path\":\"a.rs\"}".to_string(),
            false
        )]
    );
    let last = out
        .context
        .iter()
        .rev()
        .find_map(AgentMessage::as_assistant)
        .unwrap();
    assert_eq!(last.text(), "All done.");
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(last.usage.cache_read, 256);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["instructions"], "You are pi.");
    assert_eq!(reqs[0].body["tools"][0]["name"], "read");
    assert_eq!(
        reqs[1].body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "read a.rs"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "read ok: {\"path\":\"a.rs\"}"},
        ])
    );
}

#[tokio::test]
async fn a_streamed_refusal_ends_as_a_refusal_error() {
    let reply = Sse::new()
        .created("resp_r")
        .ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "msg_r", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        )
        .ev(
            "response.content_part.added",
            json!({"item_id": "msg_r", "output_index": 0, "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        )
        .ev(
            "response.refusal.delta",
            json!({"item_id": "msg_r", "output_index": 0, "content_index": 0, "delta": "I can't help with that."}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": {"id": "msg_r", "type": "message", "status": "completed", "content": [{"type": "refusal", "refusal": "I can't help with that."}], "role": "assistant"}}),
        )
        .completed("resp_r", usage(10, 0, 6, 0))
        .reply();
    let (_server, events) = run_one(vec![reply], request("gpt-5", vec![user("hi")])).await;
    let e = failure(&events);
    assert!(e.is_provider_refusal());
    assert_eq!(e.text(), "I can't help with that.");
    assert_eq!(
        e.stop_details
            .as_ref()
            .and_then(|d| d.explanation.as_deref()),
        Some("I can't help with that.")
    );
}

#[tokio::test]
async fn a_harmony_leak_over_http_is_resampled_and_kept_out_of_history() {
    let leak = "Checking.commentary to=functions.read {\"path\":\"a.rs\"}";
    let first = Sse::new()
        .created("resp_h1")
        .message(
            0,
            "msg_h1",
            &[
                "Checking.",
                "commentary to=functions.read ",
                "{\"path\":\"a.rs\"}",
            ],
        )
        .completed("resp_h1", usage(100, 0, 12, 0))
        .reply();
    let server = TestServer::start(vec![first, text_reply("The file is fine.")]).await;
    let providers = http_providers(&server, "openai");
    let config = pi::agent::engine::config::LoopConfig::new(
        Arc::new(providers),
        catalog_model("gpt-5").to_model(),
    );
    let (rec, out) = support::run(config, "check a.rs", vec![]).await;
    let out = out.unwrap_or_else(|f| panic!("run failed: {:?}", f.error));

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "one re-sample");
    assert_eq!(
        reqs[1].body["input"], reqs[0].body["input"],
        "the leak is not sent back"
    );
    assert_eq!(rec.count("turn_start"), 1);
    let texts: Vec<String> = out
        .new_messages()
        .iter()
        .filter_map(AgentMessage::as_assistant)
        .map(AssistantMessage::text)
        .collect();
    assert_eq!(texts, ["The file is fine."]);
    let shown: Vec<String> = rec
        .all()
        .iter()
        .filter_map(|e| match e {
            pi::agent::protocol::events::AgentEvent::MessageEnd { message } => message
                .as_assistant()
                .filter(|a| a.is_retried_attempt())
                .map(AssistantMessage::text),
            _ => None,
        })
        .collect();
    assert_eq!(
        shown,
        [leak],
        "the leaked attempt was shown as a discarded one"
    );
}

#[tokio::test]
async fn web_search_is_offered_and_the_cited_pages_end_the_answer() {
    let answer = "Rust 2024 shipped in 1.85.";
    let reply = Sse::new()
        .created("resp_ws")
        .ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}}),
        )
        .ev(
            "response.web_search_call.completed",
            json!({"output_index": 0, "item_id": "ws_1"}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": {"id": "ws_1", "type": "web_search_call", "status": "completed",
                   "action": {"type": "search", "query": "rust 2024 edition"}}}),
        )
        .ev(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"id": "msg_ws", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        )
        .ev(
            "response.output_text.delta",
            json!({"item_id": "msg_ws", "output_index": 1, "content_index": 0, "delta": answer}),
        )
        .ev(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"id": "msg_ws", "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": answer, "annotations": [
                       {"type": "url_citation", "start_index": 0, "end_index": 9,
                        "url": "https://doc.rust-lang.org/edition-guide/", "title": "The Rust Edition Guide"}]}]}}),
        )
        .completed("resp_ws", usage(10, 0, 5, 0))
        .reply();
    let server = TestServer::start(vec![reply]).await;
    let providers = http_providers(&server, "openai").with_web_search(true);
    let events = support::collect(&providers, request("gpt-5", vec![user("what is new?")])).await;
    let done = match events.last() {
        Some(StreamEvent::Done { message, .. }) => (**message).clone(),
        other => panic!("no answer: {other:?}"),
    };
    let text = done.text();
    assert!(text.starts_with(answer), "{text}");
    assert!(
        text.contains("Searched the web for “rust 2024 edition”.")
            && text.contains(
                "Sources:\n1. [The Rust Edition Guide](https://doc.rust-lang.org/edition-guide/)"
            ),
        "{text}"
    );
    assert_eq!(
        server.requests()[0].body["tools"],
        json!([{"type": "web_search"}])
    );
}
