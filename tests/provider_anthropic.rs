//! The Anthropic Messages wire format against a scripted local server that speaks the API's SSE
//! byte for byte: what the loop sees for text, thinking, tool calls, usage and stop reasons;
//! what goes over the wire (system, tools, pairing, cache breakpoints, thinking, headers); and
//! every failure the HTTP layer must classify (rate limits, overloads, drops, idle, abort).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::stream::kinds;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pi::agent::engine::config::LoopConfig;
use pi::agent::engine::run::run_prompt;
use pi::agent::policy::soft::SoftState;
use pi::agent::policy::validate::{PARSE_ERROR_KEY, RAW_JSON_KEY};
use pi::agent::protocol::abort::AbortSignal;
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::stream::{
    LlmContext, Model, Provider, ProviderRequest, StreamEvent, StreamOptions, ToolChoice, ToolSpec,
};
use pi::agent::protocol::thinking::Effort;
use pi::agent::protocol::tool::ToolSet;
use pi::agent::protocol::types::{
    AssistantMessage, ContentBlock, ImageContent, Message, RedactedThinkingContent,
    STOP_PAUSE_TURN, StopReason, TextContent, ThinkingContent, ToolCall, ToolResultMessage,
    UserContent, UserMessage,
};
use pi::provider::anthropic::AnthropicMessages;
use pi::provider::catalog::Catalog;
use pi::provider::wire::WireApi;
use serde_json::{Value, json};
use support::server::{Chunk, Reply, TestServer, event, raw_data};
use support::{Recorder, TestTool, http_providers, prompts};
use tokio_util::sync::CancellationToken;

/// The key `http_providers` hands out.
const KEY: &str = "test-key-123";

// ----- the API's events, shaped as it sends them ---------------------------------------------

fn message_start(id: &str, usage: Value) -> Chunk {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null,
            "usage": usage,
        }}),
    )
}

fn start(id: &str) -> Chunk {
    message_start(
        id,
        json!({"input_tokens": 25, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 0, "output_tokens": 1}),
    )
}

fn block_start(index: u64, block: Value) -> Chunk {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: u64, delta: Value) -> Chunk {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn text_start(index: u64) -> Chunk {
    block_start(index, json!({"type": "text", "text": ""}))
}

fn text(index: u64, t: &str) -> Chunk {
    delta(index, json!({"type": "text_delta", "text": t}))
}

fn tool_start(index: u64, id: &str, name: &str) -> Chunk {
    block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

fn json_part(index: u64, part: &str) -> Chunk {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": part}),
    )
}

fn block_stop(index: u64) -> Chunk {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Chunk {
    event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
    )
}

fn message_stop() -> Chunk {
    event("message_stop", &json!({"type": "message_stop"}))
}

fn ping() -> Chunk {
    event("ping", &json!({"type": "ping"}))
}

/// A whole text answer.
fn text_reply(pieces: &[&str], stop_reason: &str) -> Reply {
    let mut chunks = vec![start("msg_01"), text_start(0), ping()];
    chunks.extend(pieces.iter().map(|p| text(0, p)));
    chunks.extend([
        block_stop(0),
        message_delta(stop_reason, 12),
        message_stop(),
    ]);
    Reply::sse(chunks)
}

/// The same bytes re-cut into `size`-byte pieces, so events split anywhere.
fn fragmented(chunks: Vec<Chunk>, size: usize) -> Vec<Chunk> {
    let bytes: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| match c {
            Chunk::Bytes(b) => b,
            other => panic!("only bytes can be re-cut, got {other:?}"),
        })
        .collect();
    bytes
        .chunks(size)
        .map(|c| Chunk::Bytes(c.to_vec()))
        .collect()
}

// ----- requests and results ------------------------------------------------------------------

fn sonnet() -> Model {
    Catalog::builtin(&|_| None)
        .find("anthropic", "claude-sonnet-4-5")
        .expect("claude-sonnet-4-5 is built in")
        .to_model()
}

fn request(messages: Vec<Message>) -> ProviderRequest {
    ProviderRequest {
        model: sonnet(),
        context: LlmContext {
            system_prompt: vec!["You are pi.".into()],
            messages: Arc::new(messages.into_iter().map(Arc::new).collect()),
            tools: vec![read_spec()],
        },
        options: StreamOptions::default(),
    }
}

fn hello() -> ProviderRequest {
    request(vec![Message::User(UserMessage::new("hello"))])
}

fn read_spec() -> ToolSpec {
    ToolSpec {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}),
    }
}

async fn run_one(replies: Vec<Reply>, req: ProviderRequest) -> (TestServer, Vec<StreamEvent>) {
    let server = TestServer::start(replies).await;
    let providers = http_providers(&server, "anthropic");
    let events = support::collect(&providers, req).await;
    (server, events)
}

/// The message of the terminal event (which must be the last one, and the only terminal).
fn terminal(events: &[StreamEvent]) -> AssistantMessage {
    assert_eq!(
        events.iter().filter(|e| e.is_terminal()).count(),
        1,
        "exactly one terminal event: {:?}",
        kinds(events)
    );
    match events.last() {
        Some(StreamEvent::Done { message, .. }) => (**message).clone(),
        Some(StreamEvent::Error { error, .. }) => (**error).clone(),
        other => panic!("stream did not end with done/error: {other:?}"),
    }
}

fn error_of(events: &[StreamEvent]) -> AssistantMessage {
    let m = terminal(events);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { .. })),
        "expected an error, got {:?}",
        kinds(events)
    );
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_no_key(events);
    m
}

/// The key appears in no event (and so in no error message).
fn assert_no_key(events: &[StreamEvent]) {
    let all = serde_json::to_string(events).unwrap();
    assert!(!all.contains(KEY), "the API key leaked into the events");
}

fn user_blocks(blocks: Vec<ContentBlock>) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(blocks),
        ..UserMessage::new("")
    })
}

fn assistant(content: Vec<ContentBlock>, stop: StopReason) -> AssistantMessage {
    let mut m = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-sonnet-4-5");
    m.content = content;
    m.stop_reason = stop;
    m
}

fn call(id: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
        intent: None,
        thought_signature: None,
    })
}

fn result(id: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text(text)],
        details: None,
        is_error,
        useless: false,
        timestamp: 0,
    })
}

// ----- happy paths ---------------------------------------------------------------------------

#[tokio::test]
async fn text_streams_as_the_exact_event_sequence() {
    let (server, events) =
        run_one(vec![text_reply(&["Hello", " world"], "end_turn")], hello()).await;
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
    assert!(
        matches!(&events[2], StreamEvent::TextDelta { content_index: 0, delta } if delta == "Hello")
    );
    assert!(
        matches!(&events[4], StreamEvent::TextEnd { content_index: 0, content, .. } if content == "Hello world")
    );
    let m = terminal(&events);
    assert_eq!(m.text(), "Hello world");
    assert_eq!(m.stop_reason, StopReason::Stop);
    assert_eq!(m.response_id.as_deref(), Some("msg_01"));
    assert_eq!(
        (m.api.as_str(), m.provider.as_str()),
        ("anthropic-messages", "anthropic")
    );
    let r = &server.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
}

#[tokio::test]
async fn events_split_anywhere_in_the_byte_stream_decode_the_same() {
    let Reply { chunks, .. } = text_reply(&["Hé", "llo ✓"], "end_turn");
    let (_, events) = run_one(vec![Reply::sse(fragmented(chunks, 7))], hello()).await;
    assert_eq!(terminal(&events).text(), "Héllo ✓");
    assert_eq!(kinds(&events).len(), 6);
}

#[tokio::test]
async fn thinking_keeps_its_signature_and_redacted_thinking_its_data() {
    let reply = Reply::sse(vec![
        start("msg_think"),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Let me think"}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": " about it."}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
        ),
        block_stop(1),
        text_start(2),
        text(2, "42."),
        block_stop(2),
        message_delta("end_turn", 80),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "redacted_thinking",
            "text_start",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    assert!(
        matches!(&events[4], StreamEvent::ThinkingEnd { content, signature: Some(s), .. }
        if content == "Let me think about it." && s == "EqQBCgIYAhIM1gbcDa9GJwZA")
    );
    let m = terminal(&events);
    assert_eq!(
        m.content,
        vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "Let me think about it.".into(),
                thinking_signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA".into()),
                item_id: None,
            }),
            ContentBlock::RedactedThinking(RedactedThinkingContent {
                data: "EmwKAhgBEgy3va3pzix".into()
            }),
            ContentBlock::text("42."),
        ]
    );
}

#[tokio::test]
async fn parallel_tool_calls_stream_in_fragments_and_end_parsed() {
    let reply = Reply::sse(vec![
        start("msg_tools"),
        text_start(0),
        text(0, "Reading both."),
        block_stop(0),
        tool_start(1, "toolu_01A", "read"),
        json_part(1, ""),
        json_part(1, "{\"pa"),
        json_part(1, "th\": \"src/"),
        json_part(1, "a.rs\"}"),
        block_stop(1),
        tool_start(2, "toolu_01B", "read"),
        json_part(2, "{\"path\""),
        json_part(2, ": \"b.rs\", \"limit\": 1"),
        json_part(2, "0}"),
        block_stop(2),
        message_delta("tool_use", 60),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let starts: Vec<(usize, String, String)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart {
                content_index,
                id,
                name,
            } => Some((*content_index, id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (1, "toolu_01A".to_string(), "read".to_string()),
            (2, "toolu_01B".to_string(), "read".to_string())
        ]
    );
    let deltas = kinds(&events)
        .iter()
        .filter(|k| *k == "toolcall_delta")
        .count();
    assert_eq!(deltas, 6, "empty fragments are not events");
    let ends: Vec<ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallEnd { tool_call, .. } => Some(tool_call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0].arguments, json!({"path": "src/a.rs"}));
    assert_eq!(ends[1].arguments, json!({"path": "b.rs", "limit": 10}));
    let m = terminal(&events);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    assert_eq!(m.text(), "Reading both.");
    assert_eq!(m.tool_calls().count(), 2);
}

#[tokio::test]
async fn usage_counts_every_kind_of_token_and_the_cost_follows_the_price_list() {
    let reply = Reply::sse(vec![
        message_start(
            "msg_usage",
            json!({"input_tokens": 1000, "cache_creation_input_tokens": 2000,
                   "cache_read_input_tokens": 3000, "output_tokens": 1}),
        ),
        text_start(0),
        text(0, "ok"),
        block_stop(0),
        message_delta("end_turn", 500),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let u = terminal(&events).usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens
        ),
        (1000, 500, 3000, 2000, 6500)
    );
    // claude-sonnet-4-5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(u.cost.input, 0.003), "{:?}", u.cost);
    assert!(close(u.cost.output, 0.0075), "{:?}", u.cost);
    assert!(close(u.cost.cache_read, 0.0009), "{:?}", u.cost);
    assert!(close(u.cost.cache_write, 0.0075), "{:?}", u.cost);
    assert!(close(u.cost.total, 0.0189), "{:?}", u.cost);
}

#[tokio::test]
async fn message_delta_usage_overrides_the_start_counts_when_given() {
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "ok"),
        block_stop(0),
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                    "usage": {"input_tokens": 30, "cache_read_input_tokens": 7,
                              "output_tokens": 9}}),
        ),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let u = terminal(&events).usage;
    assert_eq!(
        (u.input, u.cache_read, u.cache_write, u.output),
        (30, 7, 0, 9)
    );
}

// ----- the request -----------------------------------------------------------------------------

/// A conversation with everything the converter must handle.
fn rich_conversation() -> Vec<Message> {
    let first = assistant(
        vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "Two files.".into(),
                thinking_signature: Some("sig-1".into()),
                item_id: None,
            }),
            ContentBlock::RedactedThinking(RedactedThinkingContent {
                data: "opaque".into(),
            }),
            ContentBlock::text(""),
            ContentBlock::text("Reading both."),
            call("toolu_1", json!({"path": "a.rs"})),
            call(
                "toolu_2",
                json!({PARSE_ERROR_KEY: "EOF while parsing", RAW_JSON_KEY: "{\"pa"}),
            ),
        ],
        StopReason::ToolUse,
    );
    let second = assistant(
        vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "unsigned thought".into(),
                thinking_signature: None,
                item_id: None,
            }),
            ContentBlock::Text(TextContent {
                text: "Both read.".into(),
                text_signature: None,
                ..Default::default()
            }),
        ],
        StopReason::Stop,
    );
    let mut failed = assistant(vec![], StopReason::Error);
    failed.error_message = Some("Overloaded (HTTP 529)".into());
    vec![
        user_blocks(vec![
            ContentBlock::text("Read a.rs and b.rs"),
            ContentBlock::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
                detail: None,
            }),
        ]),
        Message::Assistant(first),
        result("toolu_1", "fn main() {}", false),
        result("toolu_2", "invalid arguments", true),
        Message::User(UserMessage::new("also check c.rs")),
        Message::Assistant(second),
        Message::Assistant(failed),
        Message::User(UserMessage::new("thanks")),
    ]
}

#[tokio::test]
async fn request_body_carries_system_tools_pairs_breakpoints_and_thinking() {
    let mut req = request(rich_conversation());
    req.context.system_prompt = vec!["You are pi.".into(), "Project rules.".into()];
    req.context.tools = vec![
        read_spec(),
        ToolSpec {
            name: "write".into(),
            description: "Write a file".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    ];
    req.options = StreamOptions {
        reasoning: Some(Effort::High),
        temperature: Some(0.5),
        tool_choice: Some(ToolChoice::Auto),
        ..Default::default()
    };
    let (server, events) = run_one(vec![text_reply(&["ok"], "end_turn")], req).await;
    assert_eq!(terminal(&events).text(), "ok");

    let r = &server.requests()[0];
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(!r.path.contains(KEY) && !r.body.to_string().contains(KEY));
    let b = &r.body;
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(b["stream"], true);
    assert_eq!(b["max_tokens"], 64_000);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    assert!(
        b.get("temperature").is_none(),
        "no temperature with thinking"
    );
    assert_eq!(b["tool_choice"], json!({"type": "auto"}));

    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        b["system"],
        json!([
            {"type": "text", "text": "You are pi."},
            {"type": "text", "text": "Project rules.", "cache_control": ephemeral},
        ])
    );
    assert_eq!(
        b["tools"],
        json!([
            {"name": "read", "description": "Read a file", "input_schema": read_spec().parameters},
            {"name": "write", "description": "Write a file",
             "input_schema": {"type": "object", "properties": {}}, "cache_control": ephemeral},
        ])
    );

    let messages = b["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // Tool results and the steering note share one user turn; the empty error turn is gone.
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(
        messages[0]["content"],
        json!([
            {"type": "text", "text": "Read a.rs and b.rs"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": "iVBORw0KGgo="}},
        ])
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "thinking", "thinking": "Two files.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
        ])
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": "fn main() {}"}], "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_2",
             "content": [{"type": "text", "text": "invalid arguments"}], "is_error": true},
            {"type": "text", "text": "also check c.rs", "cache_control": ephemeral},
        ])
    );
    assert_eq!(
        messages[3]["content"],
        json!([
            {"type": "text", "text": "unsigned thought"},
            {"type": "text", "text": "Both read."},
        ])
    );
    assert_eq!(
        messages[4]["content"],
        json!([{"type": "text", "text": "thanks", "cache_control": ephemeral}])
    );
    assert_eq!(
        b.to_string().matches("\"cache_control\"").count(),
        4,
        "at most four breakpoints"
    );
}

#[tokio::test]
async fn tool_choice_maps_and_temperature_is_sent_without_thinking() {
    let model = Catalog::builtin(&|_| None)
        .find("anthropic", "claude-sonnet-4-5")
        .cloned()
        .unwrap();
    let cases = [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::Any, json!({"type": "any"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Tool("read".into()),
            json!({"type": "tool", "name": "read"}),
        ),
    ];
    for (choice, wire) in cases {
        let mut req = hello();
        req.options.tool_choice = Some(choice.clone());
        req.options.temperature = Some(0.3);
        req.options.max_tokens = Some(2048);
        let built = AnthropicMessages.build(&model, &req, Some(KEY)).unwrap();
        assert_eq!(built.url, format!("{}/v1/messages", model.base_url));
        assert_eq!(built.body["tool_choice"], wire, "{choice:?}");
        assert_eq!(built.body["temperature"], json!(0.3));
        assert_eq!(built.body["max_tokens"], 2048);
        assert!(built.body.get("thinking").is_none());
    }
    // Thinking that does not fit the requested output limit raises it.
    let mut req = hello();
    req.options.reasoning = Some(Effort::Medium);
    req.options.max_tokens = Some(2048);
    let built = AnthropicMessages.build(&model, &req, Some(KEY)).unwrap();
    assert_eq!(built.body["thinking"]["budget_tokens"], 8192);
    assert_eq!(built.body["max_tokens"], 2048 + 8192);
}

// ----- stop reasons --------------------------------------------------------------------------

#[tokio::test]
async fn pause_turn_is_a_stop_with_its_detail() {
    let (_, events) = run_one(vec![text_reply(&["Searching…"], "pause_turn")], hello()).await;
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    let m = terminal(&events);
    assert_eq!(m.stop_reason, StopReason::Stop);
    assert_eq!(m.stop_detail_kind(), Some(STOP_PAUSE_TURN));
}

#[tokio::test]
async fn refusal_ends_as_an_error_stop_that_is_never_replayed() {
    let (_, events) = run_one(vec![text_reply(&["I can't help"], "refusal")], hello()).await;
    let m = error_of(&events);
    assert!(m.is_provider_refusal());
    assert_eq!(m.text(), "I can't help");
    assert!(m.transient.is_none());
}

#[tokio::test]
async fn max_tokens_and_context_window_stops_are_length() {
    for reason in ["max_tokens", "model_context_window_exceeded"] {
        let (_, events) = run_one(vec![text_reply(&["cut"], reason)], hello()).await;
        assert_eq!(
            terminal(&events).stop_reason,
            StopReason::Length,
            "{reason}"
        );
    }
    let (_, events) = run_one(vec![text_reply(&["x"], "stop_sequence")], hello()).await;
    assert_eq!(terminal(&events).stop_reason, StopReason::Stop);
}

// ----- faults ----------------------------------------------------------------------------------

#[tokio::test]
async fn rate_limit_is_transient_and_carries_retry_after() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let (server, events) = run_one(
        vec![Reply::error(429, body).header("retry-after", "1")],
        hello(),
    )
    .await;
    assert_eq!(kinds(&events), ["error"], "nothing started");
    let m = error_of(&events);
    assert_eq!(m.error_status, Some(429));
    assert_eq!(m.transient.unwrap().retry_after_ms, Some(1000));
    // The provider and the URL come first.
    assert_eq!(
        m.error_message.unwrap(),
        format!(
            "anthropic ({}/v1/messages): Number of request tokens has exceeded your \
             per-minute rate limit (HTTP 429)",
            server.url
        )
    );
}

#[tokio::test]
async fn server_errors_and_overloads_are_transient_with_the_providers_message() {
    let (_, events) = run_one(
        vec![Reply::error(
            500,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        )],
        hello(),
    )
    .await;
    let m = error_of(&events);
    assert!(m.transient.is_some());
    assert!(
        m.error_message
            .unwrap()
            .ends_with("): Internal server error (HTTP 500)")
    );

    let (_, events) = run_one(
        vec![Reply::error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )],
        hello(),
    )
    .await;
    let m = error_of(&events);
    assert_eq!(m.transient.as_ref().map(|t| t.retry_after_ms), Some(None));
    assert_eq!(m.error_status, Some(529));
    assert!(
        m.error_message
            .unwrap()
            .ends_with("): Overloaded (HTTP 529)")
    );
}

#[tokio::test]
async fn client_errors_are_final_and_show_the_providers_text_and_status() {
    let cases = [
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            "prompt is too long: 210000 tokens > 200000 maximum (HTTP 400)",
        ),
        (
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            "invalid x-api-key (HTTP 401)",
        ),
    ];
    for (status, body, expected) in cases {
        let (server, events) = run_one(vec![Reply::error(status, body)], hello()).await;
        let m = error_of(&events);
        assert!(m.transient.is_none(), "{status} must not be retried");
        assert_eq!(m.error_status, Some(status));
        assert_eq!(
            m.error_message.unwrap(),
            format!("anthropic ({}/v1/messages): {expected}", server.url)
        );
        assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));
    }
}

#[tokio::test]
async fn an_error_event_mid_stream_keeps_the_partial_and_is_classified() {
    let overloaded = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "Half an ans"),
        event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ]);
    let (_, events) = run_one(vec![overloaded], hello()).await;
    let m = error_of(&events);
    assert_eq!(m.text(), "Half an ans");
    assert!(m.transient.is_some());
    assert_eq!(
        m.error_message.as_deref(),
        Some("Overloaded (overloaded_error)")
    );

    let invalid = Reply::sse(vec![
        start("m"),
        event(
            "error",
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
        ),
    ]);
    let (_, events) = run_one(vec![invalid], hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_none());
    assert_eq!(
        m.error_message.as_deref(),
        Some("bad (invalid_request_error)")
    );
}

#[tokio::test]
async fn a_disconnect_mid_stream_keeps_the_partial_text_and_is_transient() {
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "The answer is"),
        tool_start(1, "toolu_x", "read"),
        json_part(1, "{\"path\":"),
        Chunk::Disconnect,
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = error_of(&events);
    assert_eq!(m.text(), "The answer is");
    assert!(m.transient.is_some());
    assert!(
        m.error_message
            .as_deref()
            .unwrap()
            .starts_with("stream read error"),
        "{:?}",
        m.error_message
    );
    assert!(
        !kinds(&events).contains(&"toolcall_end".to_string()),
        "an unfinished tool call never ends"
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_message_stop_is_a_dropped_stream() {
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "almost"),
        block_stop(0),
        message_delta("end_turn", 3),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = error_of(&events);
    assert_eq!(m.text(), "almost");
    assert!(m.transient.is_some());
}

#[tokio::test]
async fn a_malformed_event_is_a_clear_final_error() {
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "fine so far"),
        raw_data("{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {"),
        text(0, " never seen"),
        block_stop(0),
        message_delta("end_turn", 3),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_none());
    let msg = m.error_message.clone().unwrap();
    assert!(msg.contains("malformed event"), "{msg}");
    assert!(msg.contains("content_block_delta"), "{msg}");
    assert_eq!(m.text(), "fine so far");
}

/// The start of a `content_block_delta` event, cut before its end.
const HALF_EVENT: &[u8] =
    b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"ind";

#[tokio::test]
async fn a_connection_closed_in_the_middle_of_an_event_is_a_dropped_stream() {
    // A body without framing: the close looks like a proper end to the HTTP layer.
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "fine so far"),
        Chunk::Bytes(HALF_EVENT.to_vec()),
        Chunk::Close,
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_some(), "retried, not final: {m:?}");
    assert!(m.stream_broken);
    let msg = m.error_message.clone().unwrap();
    assert!(msg.contains("in the middle of an event"), "{msg}");
    assert!(!msg.contains("malformed"), "{msg}");
    assert_eq!(m.text(), "fine so far");
}

#[tokio::test]
async fn a_chunked_body_that_ends_inside_an_event_is_a_dropped_stream() {
    // The body's framing ends properly, but inside an event (a proxy that gave up).
    let reply = Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "fine so far"),
        Chunk::Bytes(HALF_EVENT.to_vec()),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_some(), "{m:?}");
    assert!(
        m.error_message
            .as_deref()
            .unwrap()
            .contains("in the middle of an event"),
        "{m:?}"
    );
}

#[tokio::test]
async fn a_last_whole_line_without_its_blank_line_still_counts() {
    let mut reply = text_reply(&["all ", "here"], "end_turn");
    // `message_stop` ends the body without the blank line after it.
    reply.chunks.pop();
    reply.chunks.push(Chunk::Bytes(
        b"event: message_stop\ndata: {\"type\": \"message_stop\"}".to_vec(),
    ));
    reply.chunks.push(Chunk::Close);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = terminal(&events);
    assert_eq!(m.stop_reason, StopReason::Stop, "{m:?}");
    assert_eq!(m.text(), "all here");
}

/// `bytes` one at a time, `gap` apart.
fn trickle(bytes: &[u8], gap: Duration) -> Vec<Chunk> {
    bytes
        .iter()
        .flat_map(|b| [Chunk::Delay(gap), Chunk::Bytes(vec![*b])])
        .collect()
}

#[tokio::test]
async fn bytes_trickling_in_without_a_whole_event_time_out_like_silence() {
    // The rest of a proper reply, a byte every 40 ms: it would take seconds, and each byte
    // comes well within the idle timeout, but no event completes within it.
    let rest = "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \" slowly\"}}\n\n";
    let mut chunks = vec![start("m"), text_start(0), text(0, "quick")];
    chunks.extend(trickle(rest.as_bytes(), Duration::from_millis(40)));
    chunks.extend([block_stop(0), message_delta("end_turn", 3), message_stop()]);
    let server = TestServer::start(vec![Reply::sse(chunks)]).await;
    let providers =
        http_providers(&server, "anthropic").with_idle_timeout(Duration::from_millis(400));
    let events = support::collect(&providers, hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_some());
    assert_eq!(m.text(), "quick");
    let msg = m.error_message.unwrap();
    assert!(
        msg.contains("no complete event from the provider in 0.4 s"),
        "{msg}"
    );
    assert!(msg.contains("idle_timeout_secs"), "{msg}");
}

#[tokio::test]
async fn keep_alive_comments_keep_a_quiet_stream_open() {
    // Nothing but comments for longer than the idle timeout, then the answer.
    let mut chunks = vec![start("m")];
    for _ in 0..15 {
        chunks.push(Chunk::Delay(Duration::from_millis(100)));
        chunks.push(Chunk::Bytes(b": still thinking\n".to_vec()));
    }
    chunks.extend(text_reply(&["done"], "end_turn").chunks.into_iter().skip(1));
    let server = TestServer::start(vec![Reply::sse(chunks)]).await;
    let providers = http_providers(&server, "anthropic").with_idle_timeout(Duration::from_secs(1));
    let events = support::collect(&providers, hello()).await;
    let m = terminal(&events);
    assert_eq!(m.stop_reason, StopReason::Stop, "{m:?}");
    assert_eq!(m.text(), "done");
}

#[tokio::test]
async fn invalid_tool_argument_json_ends_the_call_with_the_parse_error() {
    let reply = Reply::sse(vec![
        start("m"),
        tool_start(0, "toolu_bad", "read"),
        json_part(0, "{\"path\": \"a.rs\""),
        json_part(0, ", oops}"),
        block_stop(0),
        message_delta("tool_use", 9),
        message_stop(),
    ]);
    let (_, events) = run_one(vec![reply], hello()).await;
    let m = terminal(&events);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    let call = m.tool_calls().next().unwrap();
    assert_eq!(call.id, "toolu_bad");
    assert!(
        call.arguments.get(PARSE_ERROR_KEY).is_some(),
        "{}",
        call.arguments
    );
    assert_eq!(call.arguments[RAW_JSON_KEY], "{\"path\": \"a.rs\", oops}");
}

#[tokio::test]
async fn an_idle_stream_times_out_as_transient() {
    let server = TestServer::start(vec![Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "waiting"),
        Chunk::Stall,
    ])])
    .await;
    let providers =
        http_providers(&server, "anthropic").with_idle_timeout(Duration::from_millis(200));
    let began = Instant::now();
    let events = support::collect(&providers, hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_some());
    assert_eq!(m.text(), "waiting");
    assert!(m.error_message.unwrap().contains("no complete event"));
    assert!(began.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_as_transient() {
    let server = TestServer::start(vec![Reply::silent()]).await;
    // The header timeout applies, not the (long) idle timeout of the body.
    let providers = http_providers(&server, "anthropic")
        .with_response_timeout(Duration::from_millis(200))
        .with_idle_timeout(Duration::from_secs(600));
    let began = Instant::now();
    let events = support::collect(&providers, hello()).await;
    let m = error_of(&events);
    assert!(m.transient.is_some());
    assert!(
        m.error_message
            .as_deref()
            .unwrap()
            .contains("no response within 0.2 s"),
        "{m:?}"
    );
    assert!(began.elapsed() < Duration::from_secs(5));
    // The connection was let go.
    let waited = Instant::now();
    while server.close_delays().is_empty() && waited.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.close_delays().len(), 1);
}

#[tokio::test]
async fn the_response_timeout_covers_only_the_headers() {
    // Headers at once, then a pause in the body longer than the header timeout but shorter
    // than the idle timeout: the reply completes.
    let mut reply = text_reply(&["slow ", "but fine"], "end_turn");
    reply
        .chunks
        .insert(2, Chunk::Delay(Duration::from_millis(400)));
    let server = TestServer::start(vec![reply]).await;
    let providers = http_providers(&server, "anthropic")
        .with_response_timeout(Duration::from_millis(100))
        .with_idle_timeout(Duration::from_secs(5));
    let events = support::collect(&providers, hello()).await;
    let done = terminal(&events);
    assert_eq!(done.stop_reason, StopReason::Stop, "{done:?}");
    assert_eq!(done.text(), "slow but fine");
}

#[tokio::test]
async fn abort_mid_stream_closes_the_connection_at_once() {
    let server = TestServer::start(vec![Reply::sse(vec![
        start("m"),
        text_start(0),
        text(0, "streaming"),
        Chunk::Stall,
    ])])
    .await;
    let providers = http_providers(&server, "anthropic");
    let cancel = CancellationToken::new();
    let mut stream = providers.stream(hello(), cancel.clone());
    loop {
        match stream.next().await {
            Some(Ok(StreamEvent::TextDelta { .. })) => break,
            Some(Ok(_)) => {}
            other => panic!("stream ended before any text: {other:?}"),
        }
    }
    server.wait_stalls(1).await;
    cancel.cancel();
    let waited = Instant::now();
    while server.close_delays().is_empty() && waited.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let delays = server.close_delays();
    assert_eq!(delays.len(), 1, "the connection was not closed");
    assert!(
        delays[0] < Duration::from_millis(100),
        "closed after {:?}",
        delays[0]
    );
    let rest = tokio::time::timeout(Duration::from_secs(1), stream.next())
        .await
        .expect("the stream ends once aborted");
    assert!(rest.is_none(), "nothing after an abort: {rest:?}");
}

// ----- through the agent loop ------------------------------------------------------------------

#[tokio::test]
async fn the_loop_runs_a_tool_and_sends_back_the_paired_result() {
    let server = TestServer::start(vec![
        Reply::sse(vec![
            start("msg_1"),
            text_start(0),
            text(0, "Let me look."),
            block_stop(0),
            tool_start(1, "toolu_01", "read"),
            json_part(1, "{\"path\": "),
            json_part(1, "\"a.rs\"}"),
            block_stop(1),
            message_delta("tool_use", 20),
            message_stop(),
        ]),
        text_reply(&["It is ", "empty."], "end_turn"),
    ])
    .await;
    let tool = TestTool::echo("read").schema(read_spec().parameters);
    let calls = tool.calls.clone();
    let mut config = LoopConfig::new(Arc::new(http_providers(&server, "anthropic")), sonnet());
    config.system_prompt = vec!["You are pi.".into()];
    config.tools = Arc::new(ToolSet::new(vec![tool.arc()]));
    let rec = Recorder::default();
    let outcome = run_prompt(
        prompts(&["what is in a.rs?"]),
        vec![],
        config,
        SoftState::default(),
        AbortSignal::new(),
        Arc::new(rec.clone()),
    )
    .await
    .into_result()
    .unwrap_or_else(|f| panic!("run failed: {:?}", f.error));

    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let last = outcome
        .new_messages()
        .last()
        .and_then(|m| m.as_assistant())
        .expect("ends with the assistant's answer");
    assert_eq!(last.text(), "It is empty.");
    assert!(
        rec.all()
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "toolu_01"))
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(
        messages[0]["content"][0]["text"], "what is in a.rs?",
        "{messages:#?}"
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "a.rs"}},
        ])
    );
    assert_eq!(messages[2]["role"], "user");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["content"][0]["text"], "read ok: {\"path\":\"a.rs\"}");
    assert_eq!(
        result["cache_control"],
        json!({"type": "ephemeral"}),
        "the moving tail is cached"
    );
}

#[tokio::test]
async fn web_search_is_offered_and_its_sources_end_the_answer() {
    let reply = Reply::sse(vec![
        start("msg_ws"),
        block_start(
            0,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        json_part(0, r#"{"query": "rust "#),
        json_part(0, r#"2024 edition"}"#),
        block_stop(0),
        block_start(
            1,
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "url": "https://doc.rust-lang.org/edition-guide/",
                 "title": "The Rust Edition Guide", "encrypted_content": "x", "page_age": null},
                {"type": "web_search_result", "url": "https://blog.rust-lang.org/",
                 "title": "Rust Blog", "encrypted_content": "y", "page_age": null}
            ]}),
        ),
        block_stop(1),
        text_start(2),
        text(2, "Rust 2024 shipped in 1.85."),
        delta(
            2,
            json!({"type": "citations_delta", "citation": {"type": "web_search_result_location",
                "url": "https://doc.rust-lang.org/edition-guide/", "title": "The Rust Edition Guide",
                "encrypted_index": "z", "cited_text": "Rust 2024"}}),
        ),
        block_stop(2),
        message_delta("end_turn", 30),
        message_stop(),
    ]);
    let server = TestServer::start(vec![reply]).await;
    let providers = http_providers(&server, "anthropic").with_web_search(true);
    let events = support::collect(&providers, hello()).await;
    let done = terminal(&events);
    assert_eq!(done.stop_reason, StopReason::Stop);
    assert_eq!(
        done.tool_calls().count(),
        0,
        "the server's own call is not the loop's"
    );
    let text = done.text();
    assert!(text.starts_with("Rust 2024 shipped in 1.85."), "{text}");
    assert!(
        text.contains("Searched the web for “rust 2024 edition”.")
            && text.contains(
                "Sources:\n1. [The Rust Edition Guide](https://doc.rust-lang.org/edition-guide/)"
            )
            && !text.contains("Rust Blog"),
        "{text}"
    );
    let tools = server.requests()[0].body["tools"].clone();
    assert_eq!(
        tools.as_array().unwrap().last().unwrap()["type"],
        "web_search_20250305",
        "{tools}"
    );

    // Off (the default): not offered.
    let server = TestServer::start(vec![text_reply(&["hi"], "end_turn")]).await;
    let providers = http_providers(&server, "anthropic");
    support::collect(&providers, hello()).await;
    assert!(
        !server.requests()[0].body["tools"]
            .to_string()
            .contains("web_search")
    );
}
