//! The request prefix a provider caches stays the same turn to turn, through the real binary:
//! `pi --mode rpc` talks to the local test server in each wire format (Chat Completions,
//! Messages, Responses) for several prompts, each with reasoning, a tool call and its result,
//! and every request must start with the whole of the previous one (system prompt, tools and
//! messages, byte for byte, cache markers aside). A compaction rewrites the history: the next
//! request starts over, and the ones after it extend it again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::server::{Chunk, Recorded, Reply, TestServer, chunk, event, raw_data};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};

const SUMMARY: &str = "SUMMARY: the notes were read several times";

struct Client {
    _child: Child,
    stdin: ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Client {
    fn start(home: &std::path::Path) -> Client {
        let mut child = support::rpc_pi(home, "127.0.0.1:9")
            .arg("--no-session")
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Client {
            _child: child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, cmd: Value) {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Read lines until one satisfies `want` (at most 20 s).
    async fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = tokio::time::timeout(left, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                .unwrap()
                .unwrap_or_else(|| panic!("stdout closed waiting for {what}"));
            let v: Value = serde_json::from_str(&line).expect("every line is JSON");
            if want(&v) {
                return v;
            }
        }
    }

    async fn prompt(&mut self, n: usize) {
        self.send(json!({"id": format!("p{n}"), "type": "prompt",
                          "message": format!("Turn {n}: read notes.txt again.")}))
            .await;
        self.until("agent_end", |v| v["type"] == "agent_end").await;
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    Completions,
    Anthropic,
    Responses,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Completions => "openai-completions",
            Api::Anthropic => "anthropic-messages",
            Api::Responses => "openai-responses",
        }
    }

    fn base_url(self, server: &TestServer) -> String {
        match self {
            Api::Anthropic => server.url.clone(),
            _ => format!("{}/v1", server.url),
        }
    }

    /// The part of a request every later one must repeat (system prompt, tools, model), and
    /// its conversation, with the cache markers (which move as the conversation grows) left
    /// out.
    fn split(self, body: &Value) -> (Value, Vec<Value>) {
        let body = without_cache_control(body);
        let list = match self {
            Api::Responses => "input",
            _ => "messages",
        };
        let head = json!({
            "model": body["model"],
            "system": body.get("system"),
            "instructions": body.get("instructions"),
            "tools": body.get("tools"),
        });
        let messages = body[list].as_array().cloned().unwrap_or_default();
        (head, messages)
    }

    /// Whether the request answers a tool call (so the reply is the turn's last word).
    fn after_tool(self, body: &Value) -> bool {
        let (_, messages) = self.split(body);
        let Some(last) = messages.last() else {
            return false;
        };
        match self {
            Api::Completions => last["role"] == "tool",
            Api::Anthropic => last["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result")),
            Api::Responses => last["type"] == "function_call_output",
        }
    }

    /// A reply with some reasoning, then a `read` call or (after a result) a text answer.
    fn reply(self, body: &Value, n: usize) -> Reply {
        if body.get("tools").is_none() {
            return self.text_only(n, SUMMARY);
        }
        let answer = self.after_tool(body);
        let args = json!({"path": "notes.txt"}).to_string();
        let thought = format!("Call {n}: what next?");
        match self {
            Api::Completions => {
                let mut chunks = vec![chunk(json!({"reasoning_content": thought}), None)];
                if answer {
                    chunks.push(chunk(json!({"content": format!("Answer {n}.")}), None));
                    chunks.push(chunk(json!({}), Some("stop")));
                } else {
                    chunks.push(chunk(
                        json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"),
                               "function": {"name": "read", "arguments": args}}]}),
                        None,
                    ));
                    chunks.push(chunk(json!({}), Some("tool_calls")));
                }
                chunks.push(raw_data("[DONE]"));
                Reply::sse(chunks)
            }
            Api::Anthropic => {
                let mut chunks = vec![
                    anthropic_start(n),
                    anthropic_block_start(0, json!({"type": "thinking", "thinking": ""})),
                    anthropic_delta(0, json!({"type": "thinking_delta", "thinking": thought})),
                    anthropic_delta(
                        0,
                        json!({"type": "signature_delta", "signature": format!("sig{n}")}),
                    ),
                    anthropic_block_stop(0),
                ];
                let stop = if answer {
                    chunks.push(anthropic_block_start(
                        1,
                        json!({"type": "text", "text": ""}),
                    ));
                    chunks.push(anthropic_delta(
                        1,
                        json!({"type": "text_delta", "text": format!("Answer {n}.")}),
                    ));
                    "end_turn"
                } else {
                    chunks.push(anthropic_block_start(
                        1,
                        json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "read",
                               "input": {}}),
                    ));
                    chunks.push(anthropic_delta(
                        1,
                        json!({"type": "input_json_delta", "partial_json": args}),
                    ));
                    "tool_use"
                };
                chunks.push(anthropic_block_stop(1));
                chunks.extend(anthropic_end(stop));
                Reply::sse(chunks)
            }
            Api::Responses => {
                let id = format!("resp_{n}");
                let reasoning = json!({"id": format!("rs_{n}"), "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": thought}],
                    "encrypted_content": format!("enc{n}")});
                let mut chunks = vec![
                    responses_event(
                        "response.output_item.added",
                        json!({"output_index": 0, "item": {"id": format!("rs_{n}"),
                               "type": "reasoning", "summary": []}}),
                    ),
                    responses_event(
                        "response.output_item.done",
                        json!({"output_index": 0, "item": reasoning}),
                    ),
                ];
                let item = if answer {
                    let text = format!("Answer {n}.");
                    chunks.push(responses_event(
                        "response.output_text.delta",
                        json!({"item_id": format!("msg_{n}"), "output_index": 1,
                               "content_index": 0, "delta": text}),
                    ));
                    json!({"id": format!("msg_{n}"), "type": "message", "status": "completed",
                           "role": "assistant",
                           "content": [{"type": "output_text", "annotations": [], "text": text}]})
                } else {
                    json!({"id": format!("fc_{n}"), "type": "function_call",
                           "status": "completed", "arguments": args,
                           "call_id": format!("call_{n}"), "name": "read"})
                };
                chunks.push(responses_event(
                    "response.output_item.done",
                    json!({"output_index": 1, "item": item}),
                ));
                chunks.push(responses_completed(&id));
                Reply::sse(chunks)
            }
        }
    }

    /// A plain text answer (the compaction's summary).
    fn text_only(self, n: usize, text: &str) -> Reply {
        match self {
            Api::Completions => Reply::sse(vec![
                chunk(json!({"content": text}), None),
                chunk(json!({}), Some("stop")),
                raw_data("[DONE]"),
            ]),
            Api::Anthropic => {
                let mut chunks = vec![
                    anthropic_start(n),
                    anthropic_block_start(0, json!({"type": "text", "text": ""})),
                    anthropic_delta(0, json!({"type": "text_delta", "text": text})),
                    anthropic_block_stop(0),
                ];
                chunks.extend(anthropic_end("end_turn"));
                Reply::sse(chunks)
            }
            Api::Responses => Reply::sse(vec![
                responses_event(
                    "response.output_text.delta",
                    json!({"item_id": "m", "output_index": 0, "content_index": 0,
                           "delta": text}),
                ),
                responses_event(
                    "response.output_item.done",
                    json!({"output_index": 0, "item": {"id": "m", "type": "message",
                           "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "annotations": [],
                                        "text": text}]}}),
                ),
                responses_completed(&format!("resp_{n}")),
            ]),
        }
    }
}

fn anthropic_start(n: usize) -> Chunk {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_{n}"), "type": "message", "role": "assistant", "content": [],
            "model": "m", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

fn anthropic_block_start(index: u64, block: Value) -> Chunk {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn anthropic_delta(index: u64, delta: Value) -> Chunk {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn anthropic_block_stop(index: u64) -> Chunk {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn anthropic_end(stop: &str) -> [Chunk; 2] {
    [
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": 5}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

fn responses_event(ty: &str, fields: Value) -> Chunk {
    let mut data = json!({"type": ty});
    if let (Value::Object(d), Value::Object(f)) = (&mut data, fields) {
        d.extend(f);
    }
    event(ty, &data)
}

fn responses_completed(id: &str) -> Chunk {
    responses_event(
        "response.completed",
        json!({"response": {"id": id, "object": "response", "status": "completed",
               "model": "m", "output": [],
               "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    )
}

fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// Whether `next` repeats all of `prev` (head and messages) and adds to it.
fn extends(api: Api, prev: &Recorded, next: &Recorded) -> Result<(), String> {
    let (head_a, a) = api.split(&prev.body);
    let (head_b, b) = api.split(&next.body);
    if head_a != head_b {
        return Err(format!("the head changed:\n{head_a}\n{head_b}"));
    }
    if b.len() <= a.len() {
        return Err(format!("{} messages after {}", b.len(), a.len()));
    }
    match a.iter().zip(&b).position(|(x, y)| x != y) {
        Some(k) => Err(format!("message {k} changed:\n{}\n{}", a[k], b[k])),
        None => Ok(()),
    }
}

async fn session_at(api: Api) {
    let count = Arc::new(AtomicUsize::new(0));
    let server = TestServer::responding(Arc::new(move |r: &Recorded| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        api.reply(&r.body, n)
    }))
    .await;
    let home = support::binary_home("prompt-cache");
    std::fs::write(
        home.join("project/notes.txt"),
        "line one\nline two\nline three\n",
    )
    .unwrap();
    std::fs::write(
        home.join("agent/config.toml"),
        format!(
            "model = \"lab/m\"\n[compaction]\nkeep_recent_tokens = 1\n\
             [providers.lab]\napi = \"{}\"\nbase_url = \"{}\"\nkey = \"k\"\n\
             [[providers.lab.models]]\nid = \"m\"\nreasoning = true\n\
             context_window = 1000000\n",
            api.name(),
            api.base_url(&server)
        ),
    )
    .unwrap();
    let mut client = Client::start(&home);
    for n in 0..3 {
        client.prompt(n).await;
    }
    client.send(json!({"id": "c", "type": "compact"})).await;
    let r = client
        .until("the compact answer", |v| {
            v["type"] == "response" && v["id"] == "c"
        })
        .await;
    assert_eq!(r["success"], true, "{r}");
    for n in 3..5 {
        client.prompt(n).await;
    }

    let all = server.requests();
    let main: Vec<&Recorded> = all
        .iter()
        .filter(|r| r.body.get("tools").is_some())
        .collect();
    assert_eq!(main.len(), 10, "two model calls per prompt ({api:?})");
    for i in 1..6 {
        if let Err(why) = extends(api, main[i - 1], main[i]) {
            panic!(
                "{api:?}: request {i} does not extend request {}: {why}",
                i - 1
            );
        }
    }
    // The compaction rewrote the history: the first request after it starts over with the
    // summary, and the next ones extend that.
    assert!(extends(api, main[5], main[6]).is_err(), "{api:?}");
    let (_, after) = api.split(&main[6].body);
    assert!(
        after.iter().any(|m| m.to_string().contains(SUMMARY)),
        "{api:?}: the summary opens the rewritten history"
    );
    for i in 7..10 {
        if let Err(why) = extends(api, main[i - 1], main[i]) {
            panic!(
                "{api:?}: request {i} does not extend request {}: {why}",
                i - 1
            );
        }
    }
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test]
async fn chat_completions_requests_extend_the_previous_one() {
    session_at(Api::Completions).await;
}

#[tokio::test]
async fn messages_requests_extend_the_previous_one() {
    session_at(Api::Anthropic).await;
}

#[tokio::test]
async fn responses_requests_extend_the_previous_one() {
    session_at(Api::Responses).await;
}
