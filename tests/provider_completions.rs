//! Chat Completions over real HTTP against a scripted local server: the wire format byte for
//! byte, request bodies, and every fault the issue names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::stream::kinds;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pi::agent::protocol::stream::{
    LlmContext, Model, Provider, ProviderRequest, StreamEvent, StreamOptions, ToolChoice, ToolSpec,
};
use pi::agent::protocol::types::{Message, StopReason, UserMessage};
use serde_json::{Value, json};
use support::server::{Chunk, Reply, TestServer, event, raw_data};
use support::*;
use tokio_util::sync::CancellationToken;

fn request(provider: &str, id: &str) -> ProviderRequest {
    ProviderRequest {
        model: Model::new(provider, "openai-completions", id),
        context: LlmContext {
            system_prompt: vec!["You are terse.".into()],
            messages: Arc::new(vec![Arc::new(Message::User(UserMessage::new("hi")))]),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
        },
        options: StreamOptions::default(),
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> Chunk {
    event(
        "",
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn usage(prompt: u64, completion: u64, cached: u64) -> Chunk {
    event(
        "",
        &json!({"id": "chatcmpl-1", "choices": [], "usage": {
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}}),
    )
}

fn last_message(events: &[StreamEvent]) -> pi::agent::protocol::types::AssistantMessage {
    match events.last().unwrap() {
        StreamEvent::Done { message, .. } => (**message).clone(),
        StreamEvent::Error { error, .. } => (**error).clone(),
        other => panic!("not terminal: {other:?}"),
    }
}

#[tokio::test]
async fn text_reasoning_and_usage_stream_through() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(
            json!({"role": "assistant", "reasoning_content": "thinking"}),
            None,
        ),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo"}), None),
        chunk(json!({}), Some("stop")),
        usage(100, 20, 40),
        raw_data("[DONE]"),
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let events = collect(&p, request("ollama", "qwen3:8b")).await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "text_start",
            "text_delta",
            "text_delta",
            "thinking_end",
            "text_end",
            "done"
        ]
    );
    let m = last_message(&events);
    assert_eq!(m.text(), "Hello");
    assert_eq!(m.stop_reason, StopReason::Stop);
    assert_eq!(
        (m.usage.input, m.usage.cache_read, m.usage.output),
        (60, 40, 20)
    );
    assert_eq!(m.response_id.as_deref(), Some("chatcmpl-1"));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.body["model"], "qwen3:8b");
    assert_eq!(
        req.body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(req.body["tools"][0]["function"]["name"], "read");
    assert_eq!(req.body["stream"], true);
}

#[tokio::test]
async fn parallel_tool_calls_arrive_in_fragments() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read", "arguments": ""}}]}), None),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}), None),
        chunk(json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"b\"}"}}]}), None),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a\"}"}}]}), None),
        chunk(json!({}), Some("tool_calls")),
        raw_data("[DONE]"),
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let mut req = request("ollama", "qwen3:8b");
    req.options.tool_choice = Some(ToolChoice::Tool("read".into()));
    req.options.max_tokens = Some(512);
    let events = collect(&p, req).await;
    let m = last_message(&events);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = m
        .tool_calls()
        .map(|c| (c.id.clone(), c.arguments["path"].clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a".to_string(), json!("a")),
            ("call_b".to_string(), json!("b"))
        ]
    );
    let body = &server.requests()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "read"}})
    );
    assert_eq!(body["max_tokens"], 512, "compatible servers get max_tokens");
}

#[tokio::test]
async fn missing_ids_and_missing_done_are_tolerated() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": "{}"}}]}),
            None,
        ),
        chunk(json!({}), Some("stop")),
    ])])
    .await;
    let p = http_providers(&server, "llamacpp");
    let events = collect(&p, request("llamacpp", "local")).await;
    let m = last_message(&events);
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    let call = m.tool_calls().next().unwrap();
    assert!(call.id.starts_with("call_"));
    assert_eq!(
        m.stop_reason,
        StopReason::ToolUse,
        "calls under a plain `stop` still run"
    );
}

#[tokio::test]
async fn invalid_argument_json_becomes_a_parse_error() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read", "arguments": "{\"path\": \"a"}}]}), None),
        chunk(json!({}), Some("tool_calls")),
        raw_data("[DONE]"),
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    let call = m.tool_calls().next().unwrap();
    assert!(call.arguments.get("__parseError").is_some());
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_transient_client_errors_are_not() {
    let server = TestServer::start(vec![
        Reply::error(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#,
        )
        .header("retry-after", "2"),
        Reply::error(500, r#"{"error":{"message":"boom"}}"#),
        Reply::error(401, r#"{"error":{"message":"Incorrect API key provided"}}"#),
    ])
    .await;
    let p = http_providers(&server, "openrouter");
    let m = last_message(&collect(&p, request("openrouter", "x/y")).await);
    assert_eq!(
        m.error_message.unwrap(),
        format!(
            "openrouter ({}/v1/chat/completions): Rate limit reached (HTTP 429)",
            server.url
        )
    );
    assert_eq!(m.error_status, Some(429));
    assert_eq!(m.transient.unwrap().retry_after_ms, Some(2000));
    let m = last_message(&collect(&p, request("openrouter", "x/y")).await);
    assert!(m.transient.is_some());
    let m = last_message(&collect(&p, request("openrouter", "x/y")).await);
    assert!(m.transient.is_none());
    assert!(
        m.error_message
            .as_deref()
            .unwrap()
            .ends_with("/v1/chat/completions): Incorrect API key provided (HTTP 401)")
    );
    assert!(!m.error_message.unwrap().contains("test-key-123"));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer test-key-123")
    );
}

#[tokio::test]
async fn a_disconnect_mid_stream_keeps_the_partial_and_is_transient() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"content": "partial ans"}), None),
        Chunk::Disconnect,
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_eq!(m.text(), "partial ans");
    assert!(m.transient.is_some());
    assert!(m.error_message.unwrap().starts_with("stream read error"));
}

#[tokio::test]
async fn a_malformed_event_is_a_clear_error() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"content": "ok"}), None),
        raw_data("{not json"),
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    assert!(m.error_message.unwrap().contains("malformed event"));
    assert!(m.transient.is_none());
}

#[tokio::test]
async fn an_idle_stream_times_out_as_transient() {
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"content": "hm"}), None),
        Chunk::Stall,
    ])])
    .await;
    let p = http_providers(&server, "ollama").with_idle_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(m.transient.is_some());
    assert!(m.error_message.unwrap().contains("no complete event"));
}

#[tokio::test]
async fn abort_closes_the_connection_at_once() {
    use futures::StreamExt;
    let server = TestServer::start(vec![Reply::sse(vec![
        chunk(json!({"content": "streaming"}), None),
        Chunk::Stall,
    ])])
    .await;
    let p = http_providers(&server, "ollama");
    let cancel = CancellationToken::new();
    let mut stream = p.stream(request("ollama", "q"), cancel.clone());
    // Read until the text arrives, then abort.
    while let Some(Ok(ev)) = stream.next().await {
        if matches!(ev, StreamEvent::TextDelta { .. }) {
            break;
        }
    }
    server.wait_stalls(1).await;
    cancel.cancel();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.close_delays().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let delays = server.close_delays();
    assert_eq!(delays.len(), 1);
    assert!(delays[0] < Duration::from_millis(100), "{:?}", delays[0]);
}

#[tokio::test]
async fn a_missing_key_is_a_clear_error_without_a_request() {
    let server = TestServer::start(vec![]).await;
    let mut catalog = pi::provider::catalog::Catalog::builtin(&|_| None);
    let mut info = catalog.provider("groq").unwrap().clone();
    info.base_url = server.url.clone();
    catalog.upsert_provider(info);
    let p = pi::provider::Providers::new(Arc::new(catalog), None, Arc::new(|_| None));
    let m = last_message(&collect(&p, request("groq", "llama")).await);
    assert!(m.error_message.unwrap().contains("GROQ_API_KEY"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_loop_runs_a_tool_round_over_http() {
    let server = TestServer::start(vec![
        Reply::sse(vec![
            chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "echo", "arguments": "{\"x\":1}"}}]}), None),
            chunk(json!({}), Some("tool_calls")),
            raw_data("[DONE]"),
        ]),
        Reply::sse(vec![chunk(json!({"content": "all done"}), None), chunk(json!({}), Some("stop")), raw_data("[DONE]")]),
    ])
    .await;
    let providers = Arc::new(http_providers(&server, "ollama"));
    let mut c = pi::agent::engine::config::LoopConfig::new(
        providers,
        Model::new("ollama", "openai-completions", "qwen3"),
    );
    c.tools = Arc::new(pi::agent::protocol::tool::ToolSet::new([TestTool::echo(
        "echo",
    )
    .arc()]));
    let (_, out) = run(c, "go", vec![]).await;
    let out = out.unwrap();
    assert_eq!(
        out.new_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "all done"
    );
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second[0]["role"], "user");
    assert_eq!(second[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["tool_call_id"], "call_1");
    assert_eq!(second[2]["content"], "echo ok: {\"x\":1}");
}

#[tokio::test]
async fn the_loop_retries_a_server_error_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::error(503, r#"{"error":{"message":"busy"}}"#).header("retry-after", "0"),
        Reply::sse(vec![
            chunk(json!({"content": "fine"}), None),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
    ])
    .await;
    let providers = Arc::new(http_providers(&server, "ollama"));
    let c = pi::agent::engine::config::LoopConfig::new(
        providers,
        Model::new("ollama", "openai-completions", "qwen3"),
    );
    let (rec, out) = run(c, "go", vec![]).await;
    assert_eq!(
        out.unwrap()
            .new_messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "fine"
    );
    assert_eq!(rec.count("auto_retry_start"), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_server_echoing_the_key_never_leaks_it() {
    let server = TestServer::start(vec![Reply::error(
        401,
        r#"{"error":{"message":"Invalid key: test-key-123 is not valid"}}"#,
    )])
    .await;
    let p = http_providers(&server, "openrouter");
    let m = last_message(&collect(&p, request("openrouter", "x/y")).await);
    let text = m.error_message.unwrap();
    assert!(!text.contains("test-key-123"), "{text}");
    assert!(text.contains("[redacted]"));
}

/// A 200 with the given content type and body.
fn ok_body(content_type: Option<&str>, body: &str) -> Reply {
    Reply {
        status: 200,
        headers: content_type
            .map(|t| vec![("content-type".to_string(), t.to_string())])
            .unwrap_or_default(),
        chunks: vec![Chunk::Bytes(body.as_bytes().to_vec())],
    }
}

#[tokio::test]
async fn a_200_that_is_not_an_event_stream_says_what_arrived_and_is_not_transient() {
    let page = "<!DOCTYPE html>\n<html><head><title>Welcome to\n nginx!</title></head><body>test-key-123</body></html>";
    let server = TestServer::start(vec![
        ok_body(Some("text/html; charset=utf-8"), page),
        // Labelled as a stream, but the page again.
        ok_body(Some("text/event-stream"), page),
        ok_body(None, "   "),
        ok_body(Some("text/event-stream"), ""),
        ok_body(
            Some("application/json"),
            r#"{"object":"chat.completion","choices":[{"message":{"content":"hi"}}]}"#,
        ),
    ])
    .await;
    let p = http_providers(&server, "openrouter");
    let mut seen = Vec::new();
    for _ in 0..5 {
        let m = last_message(&collect(&p, request("openrouter", "x/y")).await);
        assert_eq!(m.stop_reason, StopReason::Error);
        assert!(m.transient.is_none(), "not retried: {m:?}");
        seen.push(m.error_message.unwrap());
    }
    for html in &seen[..2] {
        assert!(
            html.contains("an HTML page (\"Welcome to nginx!\") instead of an event stream"),
            "{html}"
        );
    }
    assert!(seen[2].contains("an empty body"), "{}", seen[2]);
    assert!(seen[3].contains("an empty body"), "{}", seen[3]);
    assert!(
        seen[4].contains("a JSON document") && seen[4].contains("chat.completion"),
        "{}",
        seen[4]
    );
}

#[tokio::test]
async fn the_loop_does_not_retry_an_html_answer() {
    let server = TestServer::start(vec![ok_body(
        Some("text/html"),
        "<html><title>Captive portal</title></html>",
    )])
    .await;
    let providers = Arc::new(http_providers(&server, "ollama"));
    let c = pi::agent::engine::config::LoopConfig::new(
        providers,
        Model::new("ollama", "openai-completions", "qwen3"),
    );
    let (rec, out) = run(c, "go", vec![]).await;
    let last = out.unwrap().new_messages().last().unwrap().clone();
    let a = last.as_assistant().unwrap();
    assert_eq!(a.stop_reason, StopReason::Error);
    assert!(
        a.error_message
            .as_deref()
            .unwrap()
            .contains("Captive portal")
    );
    assert_eq!(rec.count("auto_retry_start"), 0);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_wrong_base_url_and_a_closed_port_name_the_provider_and_the_url() {
    // A base URL that reaches a server which is not the API: 404 with an HTML page.
    let page = Reply {
        status: 404,
        headers: vec![("content-type".into(), "text/html".into())],
        chunks: vec![Chunk::Bytes(
            b"<!DOCTYPE HTML>\n<html><head><title>Error response</title></head>\
              <body><p>Message: File not found.</p></body></html>"
                .to_vec(),
        )],
    };
    let server = TestServer::start(vec![page]).await;
    let p = http_providers(&server, "ollama");
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    assert_eq!(m.error_status, Some(404));
    assert_eq!(
        m.error_message.unwrap(),
        format!(
            "ollama ({}/v1/chat/completions): not found (HTTP 404)",
            server.url
        )
    );

    // Nothing listening: could not connect, to that URL.
    let p = ollama_at("http://127.0.0.1:9/v1");
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    let text = m.error_message.unwrap();
    assert!(
        text.starts_with("ollama (http://127.0.0.1:9/v1/chat/completions): could not connect: "),
        "{text}"
    );
    assert!(m.transient.is_some(), "worth retrying");
}

#[tokio::test]
async fn a_password_in_the_base_url_is_masked_in_errors() {
    let server = TestServer::start(vec![Reply::error(404, "")]).await;
    let with_password = server.url.replace("http://", "http://me:s3cr3t-pass@");
    let p = ollama_at(&format!("{with_password}/v1"));
    let m = last_message(&collect(&p, request("ollama", "q")).await);
    let text = m.error_message.unwrap();
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(text.contains("me:***@127.0.0.1"), "{text}");
    assert!(text.ends_with("not found (HTTP 404)"), "{text}");
}

/// Providers whose `ollama` entry points at `base_url`.
fn ollama_at(base_url: &str) -> pi::provider::Providers {
    let mut catalog = pi::provider::catalog::Catalog::builtin(&|_| None);
    let mut info = catalog.provider("ollama").unwrap().clone();
    info.base_url = base_url.to_string();
    catalog.upsert_provider(info);
    let env: pi::provider::EnvLookup = Arc::new(|_| None);
    pi::provider::Providers::new(Arc::new(catalog), None, env)
}
