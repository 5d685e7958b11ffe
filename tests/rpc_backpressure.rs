//! A slow RPC client: while it does not read stdout, pi stops reading the model's answer
//! instead of queueing its events, and once it reads again nothing is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::server::{Chunk, Reply, TestServer, chunk, raw_data, tags};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Deltas in the answer, and SSE events per body chunk the server writes.
const DELTAS: usize = 200_000;
const PER_CHUNK: usize = 500;

fn delta_text(i: usize) -> String {
    format!("<{i:012}>")
}

/// A long answer of many small deltas (~ 20 MB on the wire, 2.8 MB of text).
fn long_answer() -> Reply {
    let mut chunks = Vec::new();
    let mut body = Vec::new();
    for i in 0..DELTAS {
        if let Chunk::Bytes(b) = chunk(json!({"content": delta_text(i)}), None) {
            body.extend_from_slice(&b);
        }
        if (i + 1) % PER_CHUNK == 0 {
            chunks.push(Chunk::Bytes(std::mem::take(&mut body)));
        }
    }
    if !body.is_empty() {
        chunks.push(Chunk::Bytes(body));
    }
    chunks.push(chunk(json!({}), Some("stop")));
    chunks.push(raw_data("[DONE]"));
    Reply::sse(chunks)
}

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_makes_pi_wait_and_loses_nothing() {
    let server = TestServer::start(vec![tags("qwen3:8b"), long_answer()]).await;
    let total_chunks = DELTAS.div_ceil(PER_CHUNK) + 2;
    let home = support::binary_home("rpc_backpressure");
    let mut child = support::rpc_pi(&home, &server.url)
        .arg("--no-session")
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"go on\"}\n")
        .await
        .unwrap();
    stdin.flush().await.unwrap();

    // Read nothing until the server has sent the whole answer or stopped getting anywhere
    // (pi no longer reads the socket). Either way the answer is not yet read by the client.
    let mut last = 0;
    let mut still = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sent = server.chunks_sent();
        if sent >= total_chunks {
            break;
        }
        still = if sent == last { still + 1 } else { 0 };
        last = sent;
        if sent > 0 && still >= 10 {
            break;
        }
    }
    assert!(
        server.chunks_sent() < total_chunks,
        "the server sent the whole answer while nobody read pi's stdout"
    );

    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut kinds = Vec::new();
    let mut streamed = String::new();
    let mut final_text = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while final_text.is_none() {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("the answer arrives once the client reads")
            .unwrap()
            .expect("stdout stays open until the run ends");
        let v: Value = serde_json::from_str(&line).unwrap();
        let kind = v["type"].as_str().unwrap_or_default().to_string();
        if kind == "message_update" {
            let e = &v["assistantMessageEvent"];
            if e["type"] == "text_delta" {
                streamed.push_str(e["delta"].as_str().unwrap());
            }
            continue;
        }
        if kind == "agent_end" {
            let messages = v["messages"].as_array().unwrap();
            let last = messages.last().unwrap();
            final_text = Some(last["content"][0]["text"].as_str().unwrap().to_string());
        }
        kinds.push(kind);
    }
    let peak_mb = peak_rss_kb(pid) / 1024;
    let expected: String = (0..DELTAS).map(delta_text).collect();
    assert_eq!(streamed.len(), expected.len());
    assert!(streamed == expected, "the deltas arrive whole and in order");
    assert!(
        final_text.unwrap() == expected,
        "the final message holds the answer"
    );
    for kind in [
        "response",
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    // Queued without limit, 200,000 delta events hold well over 100 MB; paced, pi holds the
    // answer's text a few times over and a bounded queue.
    assert!(peak_mb < 80, "pi's peak RSS grew to {peak_mb} MB");
    drop(stdin);
    let _ = child.wait().await;
}
