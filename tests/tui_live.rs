//! Live text, end to end: the real binary in a pseudo-terminal against a local
//! server speaking the Chat Completions wire format, the screen read back through vt100.
//!
//! The streaming test is paced by events, not time: the server sends a delta without a
//! newline and then waits at a gate until the test has seen that text on screen.
//! The editor tests type and paste what a person would and read the rows back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::pty::{Pty, temp_home};
use support::server::{Chunk, Gate, Reply, TestServer, chunk, raw_data, tags};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_on_screen_before_its_newline_arrives() {
    let first = Gate::default();
    let second = Gate::default();
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "A single line that is still "}), None),
            Chunk::Gate(first.clone()),
            chunk(json!({"content": "growing, **bold so"}), None),
            Chunk::Gate(second.clone()),
            chunk(json!({"content": " far** and done.\nNext line."}), None),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
    ])
    .await;
    let home = temp_home("live-text");
    let mut pi = Pty::spawn(&home, &server, &[]);
    pi.wait_for("qwen3:8b");
    pi.send(b"stream something");
    pi.wait_for("stream something");
    pi.send(b"\r");

    // No newline has come yet; the server waits until the text is seen.
    let s = pi.wait_for("A single line that is still");
    assert!(s.contains("esc to interrupt"), "still streaming:\n{s}");
    first.open();
    // Open bold markup is shown bold already, without its asterisks.
    let s = pi.wait_for("A single line that is still growing, bold so");
    assert!(!s.contains("**"), "{s}");
    second.open();
    pi.wait_for("Next line.");
    let s = pi.wait_until("the run to end", |s| !s.contains("esc to interrupt"));
    assert!(
        s.contains("A single line that is still growing, bold so far and done."),
        "{s}"
    );
    assert!(pi.quit().success());
    let _ = std::fs::remove_dir_all(&home);
}
